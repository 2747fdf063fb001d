// PlacementService over a real loopback server: dry runs leave the state alone, explain says
// why per tier, admin drain goes through DaemonState, WatchDecisions streams and ends promptly.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>

#include <random>
#include <thread>

#include "tests/grpc/grpc_test_env.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace topogang {
namespace {

using testing::GrpcTestEnv;
using ::testing::HasSubstr;
namespace v1 = ::topogang::v1;

v1::GangSpec Spec(const std::string& name, int members, int gpm, const std::string& req = "") {
  v1::GangSpec g;
  g.set_name(name);
  g.set_members(members);
  g.set_gpus_per_member(gpm);
  g.set_required_tier(req);
  return g;
}

GangSpec CoreSpec(const std::string& name, int members, int gpm) {
  GangSpec g;
  g.name = name;
  g.members = members;
  g.gpus_per_member = gpm;
  return g;
}

class PlacementServiceTest : public ::testing::Test {
 protected:
  GrpcTestEnv env;
  std::unique_ptr<v1::PlacementService::Stub> stub = v1::PlacementService::NewStub(env.Channel());
  int FreeHealthy() {
    return env.state->With([](GangScheduler& s) { return s.cluster().FreeHealthy(0); });
  }
};

TEST_F(PlacementServiceTest, DryRunPlacesInOrderWithoutReserving) {
  v1::DryRunRequest req;
  *req.add_gangs() = Spec("a", 4, 8, "leaf");
  *req.add_gangs() = Spec("b", 4, 8, "leaf");
  *req.add_gangs() = Spec("c", 1, 1);
  grpc::ClientContext ctx;
  v1::DryRunResponse resp;
  ASSERT_TRUE(stub->DryRun(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.results_size(), 3);
  EXPECT_TRUE(resp.results(0).fits());
  EXPECT_TRUE(resp.results(1).fits());
  EXPECT_EQ(resp.results(0).placement().tier(), "leaf");
  // The second gang saw the first one's GPUs as used: a different leaf.
  EXPECT_NE(resp.results(0).placement().domain(), resp.results(1).placement().domain());
  EXPECT_FALSE(resp.results(2).fits());
  EXPECT_THAT(resp.results(2).no_fit_reason(), ::testing::Not(::testing::IsEmpty()));
  EXPECT_EQ(resp.total_gpus(), 64);
  // Nothing reserved, nothing used.
  EXPECT_EQ(FreeHealthy(), 64);
  EXPECT_TRUE(env.state->With([](GangScheduler& s) { return s.gangs().empty(); }));
}

TEST_F(PlacementServiceTest, DryRunAvoidsDrainedNodesOnlyForThatCall) {
  v1::DryRunRequest req;
  *req.add_gangs() = Spec("a", 4, 8, "leaf");
  *req.add_gangs() = Spec("b", 4, 8, "leaf");
  for (const char* n : {"lab-a1", "lab-a2", "lab-a3", "lab-a4"}) req.add_drained_nodes(n);
  grpc::ClientContext ctx;
  v1::DryRunResponse resp;
  ASSERT_TRUE(stub->DryRun(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.free_healthy_gpus(), 32);
  ASSERT_TRUE(resp.results(0).fits());
  for (const std::string& n : resp.results(0).placement().nodes())
    EXPECT_THAT(n, HasSubstr("lab-b"));
  EXPECT_FALSE(resp.results(1).fits());
  EXPECT_THAT(resp.results(1).no_fit_reason(), HasSubstr("leaf"));
  EXPECT_EQ(FreeHealthy(), 64);
  EXPECT_EQ(env.state->NodeHealthSources("lab-a1"), 0);
}

TEST_F(PlacementServiceTest, DryRunRejectsBadInputAndKeepsServing) {
  struct Case {
    v1::DryRunRequest req;
    grpc::StatusCode code;
    const char* msg;
  };
  std::vector<Case> cases(5);
  cases[0] = {{}, grpc::StatusCode::INVALID_ARGUMENT, "at least one gang"};
  *cases[1].req.add_gangs() = Spec("z", 0, 8);
  cases[1].code = grpc::StatusCode::INVALID_ARGUMENT;
  cases[1].msg = "members";
  *cases[2].req.add_gangs() = Spec("z", 1, 8, "no-such-tier");
  cases[2].code = grpc::StatusCode::INVALID_ARGUMENT;
  cases[2].msg = "no-such-tier";
  *cases[3].req.add_gangs() = Spec("z", 1, 8);
  cases[3].req.add_drained_nodes("ghost");
  cases[3].code = grpc::StatusCode::NOT_FOUND;
  cases[3].msg = "ghost";
  *cases[4].req.add_gangs() = Spec(std::string(300, 'x'), 1, 8);
  cases[4].code = grpc::StatusCode::INVALID_ARGUMENT;
  cases[4].msg = "name";
  for (const Case& c : cases) {
    grpc::ClientContext ctx;
    v1::DryRunResponse resp;
    grpc::Status s = stub->DryRun(&ctx, c.req, &resp);
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.msg));
  }
  grpc::ClientContext ctx;
  v1::ListGangsResponse resp;
  EXPECT_TRUE(stub->ListGangs(&ctx, {}, &resp).ok());
}

TEST_F(PlacementServiceTest, OversizeRequestIsResourceExhausted) {
  v1::DryRunRequest req;
  *req.add_gangs() = Spec("a", 1, 1);
  for (int i = 0; i < 20000; ++i) req.add_drained_nodes(std::string(100, 'n'));
  ASSERT_GT(req.ByteSizeLong(), static_cast<size_t>(env.options.max_receive_bytes));
  grpc::ClientContext ctx;
  v1::DryRunResponse resp;
  grpc::Status s = stub->DryRun(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  grpc::ClientContext ctx2;
  v1::ListGangsResponse list;
  EXPECT_TRUE(stub->ListGangs(&ctx2, {}, &list).ok());
}

TEST_F(PlacementServiceTest, GarbageBytesAreRefusedAndServerKeepsServing) {
  grpc::GenericStub generic(env.Channel());
  const std::string junk = "\xff\xff\xff\xff\x0f garbage that is not protobuf";
  grpc::Slice slice(junk);
  grpc::ByteBuffer in(&slice, 1), out;
  grpc::ClientContext ctx;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  generic.UnaryCall(&ctx, "/topogang.v1.PlacementService/DryRun", grpc::StubOptions(), &in, &out,
                    [&](grpc::Status s) {
                      std::lock_guard<std::mutex> l(mu);
                      status = s;
                      done = true;
                      cv.notify_all();
                    });
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(20), [&] { return done; }));
  // Undecodable protobuf is refused by gRPC itself before our handler runs: INTERNAL (gRPC
  // 1.51 gives no message). Decodable-but-wrong input reaches our checks (the tests above).
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << status.error_message();
  grpc::ClientContext ctx2;
  v1::ListGangsResponse list;
  EXPECT_TRUE(stub->ListGangs(&ctx2, {}, &list).ok());
}

// Valid requests with random bytes flipped, sent raw to every unary method: whatever the status,
// the daemon keeps serving and the model stays consistent.
TEST_F(PlacementServiceTest, MutatedRequestsNeverBreakTheDaemon) {
  grpc::GenericStub generic(env.Channel());
  auto call = [&](const std::string& method, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer in(&slice, 1), out;
    grpc::ClientContext ctx;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
    generic.UnaryCall(&ctx, method, grpc::StubOptions(), &in, &out, [&](grpc::Status s) {
      std::lock_guard<std::mutex> l(mu);
      status = s;
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> l(mu);
    EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(20), [&] { return done; }));
    return status;
  };
  v1::DryRunRequest dry;
  *dry.add_gangs() = Spec("m", 2, 4, "leaf");
  dry.add_drained_nodes("lab-a1");
  v1::ExplainRequest explain;
  explain.set_gang("m");
  *explain.mutable_spec() = Spec("m", 3, 8, "spine");
  v1::DrainRequest drain;
  drain.set_node("lab-b3");
  drain.set_reason("fuzz");
  const std::vector<std::pair<std::string, std::string>> seeds = {
      {"/topogang.v1.PlacementService/DryRun", dry.SerializeAsString()},
      {"/topogang.v1.PlacementService/Explain", explain.SerializeAsString()},
      {"/topogang.v1.PlacementService/Drain", drain.SerializeAsString()},
      {"/topogang.v1.AgentService/Register", "\n\x06lab-a1\x12\x04\x08\x03\x10\x01"},
  };
  std::mt19937 rng(20261123);
  int ok = 0, refused = 0;
  for (const auto& [method, seed] : seeds) {
    for (int i = 0; i < 150; ++i) {
      std::string b = seed;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips && !b.empty(); ++f) b[rng() % b.size()] = static_cast<char>(rng());
      grpc::Status s = call(method, b);
      (s.ok() ? ok : refused)++;
      EXPECT_NE(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
    }
  }
  EXPECT_GT(refused, 0);
  grpc::ClientContext ctx;
  v1::ListGangsResponse list;
  EXPECT_TRUE(stub->ListGangs(&ctx, {}, &list).ok());
  EXPECT_TRUE(env.state->With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

TEST_F(PlacementServiceTest, ExplainHeldGangAndPendingSpec) {
  ASSERT_TRUE(env.state->With(
      [&](GangScheduler& s) { return s.Reserve(CoreSpec("held", 2, 8), env.clock.Now()).ok(); }));
  {
    grpc::ClientContext ctx;
    v1::ExplainRequest req;
    req.set_gang("held");
    v1::ExplainResponse resp;
    ASSERT_TRUE(stub->Explain(&ctx, req, &resp).ok());
    EXPECT_TRUE(resp.held());
    EXPECT_EQ(resp.state(), v1::GANG_STATE_RESERVED);
    EXPECT_EQ(resp.placement().members_size(), 2);
    ASSERT_GE(resp.tiers_size(), 3);
    EXPECT_EQ(resp.tiers(0).tier(), "node");  // narrowest first
    EXPECT_EQ(resp.tiers(resp.tiers_size() - 1).tier(), "cluster");
    EXPECT_TRUE(resp.would_fit_now());
    EXPECT_THAT(resp.summary(), HasSubstr("reserved"));
  }
  {
    grpc::ClientContext ctx;
    v1::ExplainRequest req;
    req.set_gang("pending");
    v1::ExplainResponse resp;
    EXPECT_EQ(stub->Explain(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    // 5 x 8 GPUs in one leaf: a leaf has 4 nodes, so every leaf is rejected.
    grpc::ClientContext ctx;
    v1::ExplainRequest req;
    req.set_gang("pending");
    *req.mutable_spec() = Spec("pending", 5, 8, "leaf");
    v1::ExplainResponse resp;
    ASSERT_TRUE(stub->Explain(&ctx, req, &resp).ok());
    EXPECT_FALSE(resp.held());
    EXPECT_FALSE(resp.would_fit_now());
    const v1::TierExplanation* leaf = nullptr;
    const v1::TierExplanation* cluster = nullptr;
    for (const auto& t : resp.tiers()) {
      if (t.tier() == "leaf") leaf = &t;
      if (t.tier() == "cluster") cluster = &t;
    }
    ASSERT_NE(leaf, nullptr);
    ASSERT_NE(cluster, nullptr);
    EXPECT_TRUE(leaf->allowed());
    EXPECT_EQ(leaf->domains(), 2);
    EXPECT_EQ(leaf->domains_that_fit(), 0);
    ASSERT_EQ(leaf->rejected_size(), 2);
    // "held" took 2 nodes somewhere: the roomier leaf has 4 free nodes, the other 2.
    EXPECT_EQ(leaf->rejected(0).member_capacity(), 4);
    EXPECT_EQ(leaf->rejected(1).member_capacity(), 2);
    EXPECT_THAT(leaf->rejected(0).reason(), HasSubstr("room for 4 of 5 members"));
    EXPECT_FALSE(cluster->allowed());
    EXPECT_THAT(cluster->verdict(), HasSubstr("requires one leaf"));
  }
}

// Per-job exclusion in explain (#13): the nodes a gang avoids, why, and the tiers without them.
TEST_F(PlacementServiceTest, ExplainShowsAvoidedAndSlowNodes) {
  const absl::Time now = env.clock.Now();
  ASSERT_FALSE(env.state->slow_nodes().Report("lab-a1", SlownessSignal::kClockThrottle, now));
  ASSERT_TRUE(env.state->slow_nodes().Report("lab-a1", SlownessSignal::kLinkReplay, now));
  env.state->avoidance().set_slow_gang_gpus(32);
  const auto explain = [&](const v1::GangSpec& spec) {
    grpc::ClientContext ctx;
    v1::ExplainRequest req;
    *req.mutable_spec() = spec;
    v1::ExplainResponse resp;
    EXPECT_TRUE(stub->Explain(&ctx, req, &resp).ok());
    return resp;
  };
  const auto leaf_fits = [](const v1::ExplainResponse& r) {
    for (const auto& t : r.tiers()) {
      if (t.tier() == "leaf") return t.domains_that_fit();
    }
    return -1;
  };
  // 4 x 8 in a leaf is 32 GPUs: it avoids the slow node, so only leaf b (4 free nodes) fits.
  v1::ExplainResponse wide = explain(Spec("wide", 4, 8, "leaf"));
  ASSERT_EQ(wide.avoided_nodes_size(), 1);
  EXPECT_EQ(wide.avoided_nodes(0).node(), "lab-a1");
  EXPECT_THAT(wide.avoided_nodes(0).reason(), HasSubstr("slow: score"));
  EXPECT_THAT(wide.avoided_nodes(0).reason(), HasSubstr("link-replay"));
  ASSERT_EQ(wide.slow_nodes_size(), 1);
  EXPECT_EQ(wide.slow_node_gang_gpus(), 32);
  EXPECT_EQ(leaf_fits(wide), 1);
  EXPECT_THAT(wide.summary(), HasSubstr("avoids 1 node(s): lab-a1"));
  // A single 8-GPU member does not care: nothing avoided, both leaves fit; the slow node is
  // still listed as slow.
  v1::ExplainResponse narrow = explain(Spec("narrow", 1, 8, "leaf"));
  EXPECT_EQ(narrow.avoided_nodes_size(), 0);
  EXPECT_EQ(narrow.slow_nodes_size(), 1);
  EXPECT_EQ(leaf_fits(narrow), 2);
  // What the ledger recorded for a gang (here: an avoid-nodes annotation naming lab-b2) counts
  // too: with a node gone from each leaf, 4 x 8 fits in neither.
  env.state->avoidance().Record("named", {{"lab-b2", "named in topogang.io/avoid-nodes"}});
  v1::ExplainResponse named = explain(Spec("named", 4, 8, "leaf"));
  ASSERT_EQ(named.avoided_nodes_size(), 2);
  EXPECT_EQ(named.avoided_nodes(0).node(), "lab-b2");
  EXPECT_EQ(named.avoided_nodes(1).node(), "lab-a1");
  EXPECT_EQ(leaf_fits(named), 0);
  EXPECT_FALSE(named.would_fit_now());
  // Explain changed nothing: every GPU is still free and healthy.
  EXPECT_EQ(FreeHealthy(), 64);
}

TEST_F(PlacementServiceTest, GetListGangsAndReservations) {
  env.state->With([&](GangScheduler& s) {
    ASSERT_TRUE(s.Reserve(CoreSpec("r1", 1, 8), env.clock.Now()).ok());
    ASSERT_TRUE(s.Reserve(CoreSpec("run1", 2, 4), env.clock.Now()).ok());
    ASSERT_TRUE(s.Commit("run1").ok());
  });
  grpc::ClientContext c1;
  v1::GetGangRequest g;
  g.set_gang("run1");
  v1::Gang gang;
  ASSERT_TRUE(stub->GetGang(&c1, g, &gang).ok());
  EXPECT_EQ(gang.state(), v1::GANG_STATE_RUNNING);
  EXPECT_EQ(gang.placement().members_size(), 2);
  EXPECT_EQ(gang.placement().members(0).gpus_size(), 4);
  EXPECT_EQ(gang.expires_at_unix_ms(), 0);

  grpc::ClientContext c2;
  g.set_gang("nope");
  EXPECT_EQ(stub->GetGang(&c2, g, &gang).error_code(), grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext c3;
  v1::ListGangsRequest lr;
  lr.set_state(v1::GANG_STATE_RUNNING);
  v1::ListGangsResponse list;
  ASSERT_TRUE(stub->ListGangs(&c3, lr, &list).ok());
  ASSERT_EQ(list.gangs_size(), 1);
  EXPECT_EQ(list.gangs(0).spec().name(), "run1");

  // A queue hold maps to its own state and is not a reservation.
  env.state->With([&](GangScheduler& s) {
    auto p = s.DryRun(CoreSpec("hold1", 1, 8));
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(s.Adopt(CoreSpec("hold1", 1, 8), *p, GangState::kHeld, env.clock.Now()).ok());
  });
  grpc::ClientContext c5;
  lr.set_state(v1::GANG_STATE_HELD);
  ASSERT_TRUE(stub->ListGangs(&c5, lr, &list).ok());
  ASSERT_EQ(list.gangs_size(), 1);
  EXPECT_EQ(list.gangs(0).spec().name(), "hold1");

  grpc::ClientContext c4;
  v1::ListReservationsResponse res;
  ASSERT_TRUE(stub->ListReservations(&c4, {}, &res).ok());
  ASSERT_EQ(res.reservations_size(), 1);
  EXPECT_EQ(res.reservations(0).spec().name(), "r1");
  EXPECT_GT(res.reservations(0).expires_at_unix_ms(), res.reservations(0).reserved_at_unix_ms());
}

TEST_F(PlacementServiceTest, DrainAndUndrainGoThroughDaemonState) {
  grpc::ClientContext c1;
  v1::DrainRequest d;
  d.set_node("lab-b2");
  d.set_reason("bad cable");
  v1::NodeHealth h;
  ASSERT_TRUE(stub->Drain(&c1, d, &h).ok());
  EXPECT_FALSE(h.healthy());
  EXPECT_THAT(h.sources(), ::testing::ElementsAre("drained"));
  EXPECT_EQ(h.reason(), "bad cable");
  EXPECT_EQ(h.free_healthy_gpus(), 0);
  EXPECT_EQ(env.state->NodeHealthSources("lab-b2"),
            static_cast<uint8_t>(HealthSource::kAdminDrain));
  EXPECT_EQ(FreeHealthy(), 56);

  grpc::ClientContext c2;
  ASSERT_TRUE(stub->Undrain(&c2, d, &h).ok());
  EXPECT_TRUE(h.healthy());
  EXPECT_EQ(FreeHealthy(), 64);

  grpc::ClientContext c3;
  d.set_reason("");
  EXPECT_EQ(stub->Drain(&c3, d, &h).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext c4;
  d.set_node("ghost");
  d.set_reason("x");
  EXPECT_EQ(stub->Drain(&c4, d, &h).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(PlacementServiceTest, WatchDecisionsStreamsAndEndsOnCancel) {
  grpc::ClientContext ctx;
  v1::WatchDecisionsRequest req;
  req.set_from_now(true);
  auto reader = stub->WatchDecisions(&ctx, req);
  // The stream is live once the server has taken the call; publish after that by waiting for
  // the initial metadata.
  reader->WaitForInitialMetadata();
  // A gang reserved and committed through DaemonState, as the extender does.
  env.state->With(
      [&](GangScheduler& s) { ASSERT_TRUE(s.Reserve(CoreSpec("w", 2, 8), env.clock.Now()).ok()); });
  env.state->Publish({0, absl::Time(), "reserve", "w", "", "2 members"});
  env.state->With([&](GangScheduler& s) { ASSERT_TRUE(s.Commit("w").ok()); });
  env.state->Publish({0, absl::Time(), "bind", "w", "", "all members bound"});
  v1::DecisionEvent ev;
  std::vector<std::string> kinds;
  while (kinds.size() < 2 && reader->Read(&ev)) {
    EXPECT_EQ(ev.gang(), "w");
    kinds.push_back(ev.kind());
  }
  EXPECT_THAT(kinds, ::testing::ElementsAre("reserve", "bind"));
  const absl::Time t0 = absl::Now();
  ctx.TryCancel();
  while (reader->Read(&ev)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5));
}

TEST_F(PlacementServiceTest, WatchDecisionsEndsOnServerShutdown) {
  grpc::ClientContext ctx;
  v1::WatchDecisionsRequest req;
  req.set_after_seq(0);
  auto reader = stub->WatchDecisions(&ctx, req);
  reader->WaitForInitialMetadata();
  const absl::Time t0 = absl::Now();
  std::thread stopper([&] { env.server->Shutdown(); });
  v1::DecisionEvent ev;
  while (reader->Read(&ev)) {
  }
  grpc::Status s = reader->Finish();
  stopper.join();
  EXPECT_FALSE(s.ok());
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5));
}

}  // namespace
}  // namespace topogang
