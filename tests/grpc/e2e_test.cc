// End to end over loopback: real AgentClients with fake GPUs against the real gRPC server and
// the shared DaemonState. Waits are on DaemonState events or agent log lines (condition
// variables with a deadline), never sleeps.
#include <gmock/gmock.h>

#include <condition_variable>

#include "agent/agent_client.h"
#include "agent/fake_source.h"
#include "tests/grpc/grpc_test_env.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace topogang {
namespace {

using testing::GrpcTestEnv;
using ::testing::HasSubstr;
namespace v1 = ::topogang::v1;

const char* const kNodes[] = {"lab-a1", "lab-a2", "lab-a3", "lab-a4",
                              "lab-b1", "lab-b2", "lab-b3", "lab-b4"};

std::string TokenOf(const std::string& node) { return "tok-" + node + "-0123456789abcdef"; }

// Collects agent log lines; lets a test wait for one.
class LogSink {
 public:
  std::function<void(const std::string&)> Fn() {
    return [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(l);
      cv_.notify_all();
    };
  }
  // Waits until `n` lines contain `text`.
  bool WaitFor(const std::string& text, int n = 1, absl::Duration limit = absl::Seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(limit), [&] {
      int c = 0;
      for (const auto& l : lines_) c += l.find(text) != std::string::npos;
      return c >= n;
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
};

struct FakeAgent {
  FakeAgent(const GrpcTestEnv& env, const std::string& node, const std::string& token)
      : gpus(8, "NVIDIA H100 80GB HBM3", node) {
    agent::AgentOptions o;
    o.server = env.target();
    o.node = node;
    o.token = token;
    o.min_backoff = absl::Milliseconds(20);
    o.max_backoff = absl::Milliseconds(200);
    o.log = log.Fn();
    client = std::make_unique<agent::AgentClient>(o, gpus);
    client->Start();
  }
  agent::FakeGpuSource gpus;
  LogSink log;
  std::unique_ptr<agent::AgentClient> client;
};

GrpcServerOptions TokenOptions() {
  GrpcServerOptions o = GrpcTestEnv::PlaintextOptions();
  o.allow_unauthenticated_agents = false;
  for (const char* n : kNodes) o.tokens.node_by_token[TokenOf(n)] = n;
  return o;
}

v1::DryRunResponse DryRun(GrpcTestEnv& env, int members, int gpm) {
  auto stub = v1::PlacementService::NewStub(env.Channel());
  v1::DryRunRequest req;
  v1::GangSpec* g = req.add_gangs();
  g->set_name("probe");
  g->set_members(members);
  g->set_gpus_per_member(gpm);
  grpc::ClientContext ctx;
  v1::DryRunResponse resp;
  EXPECT_TRUE(stub->DryRun(&ctx, req, &resp).ok());
  return resp;
}

TEST(GrpcE2eTest, XidMakesDryRunAvoidTheGpuUntilRecovery) {
  GrpcTestEnv env(TokenOptions());
  int64_t seq = env.state->LastSeq();
  std::vector<std::unique_ptr<FakeAgent>> agents;
  for (const char* n : kNodes) agents.push_back(std::make_unique<FakeAgent>(env, n, TokenOf(n)));
  for (int i = 0; i < 8; ++i) {
    auto e = env.WaitFor(seq, "agent-registered");
    ASSERT_TRUE(e);
    seq = e->seq;
  }
  ASSERT_TRUE(DryRun(env, 8, 8).results(0).fits());

  const int64_t before = env.state->LastSeq();
  agents[0]->gpus.Inject({3, agent::GpuEventKind::kXid, 79, "fell off the bus"});
  auto bad = env.WaitFor(before, "gpu-unhealthy", "lab-a1");
  ASSERT_TRUE(bad);
  EXPECT_THAT(bad->detail, HasSubstr("XID 79"));
  EXPECT_TRUE(env.GpuFaulty("lab-a1", 3));

  EXPECT_FALSE(DryRun(env, 8, 8).results(0).fits());
  v1::DryRunResponse r = DryRun(env, 63, 1);
  ASSERT_TRUE(r.results(0).fits());
  for (const auto& m : r.results(0).placement().members()) {
    EXPECT_FALSE(m.node() == "lab-a1" && m.gpus(0) == 3) << "placed on the failed GPU";
  }

  const int64_t before2 = env.state->LastSeq();
  agents[0]->gpus.Inject({3, agent::GpuEventKind::kRecovered, 0, "reset"});
  ASSERT_TRUE(env.WaitFor(before2, "gpu-healthy", "lab-a1"));
  EXPECT_TRUE(DryRun(env, 8, 8).results(0).fits());
}

TEST(GrpcE2eTest, AgentWithAnotherNodesIdentityIsRefused) {
  GrpcTestEnv env(TokenOptions());
  FakeAgent liar(env, "lab-a2", TokenOf("lab-a1"));
  ASSERT_TRUE(liar.log.WaitFor("PERMISSION_DENIED"));
  EXPECT_EQ(liar.client->registrations(), 0);
  EXPECT_FALSE(env.server->agents().Registered("lab-a2"));
}

TEST(GrpcE2eTest, HeartbeatLossMarksNodeUnhealthyAndReturnClearsIt) {
  GrpcTestEnv env(TokenOptions());
  int64_t seq = env.state->LastSeq();
  auto a = std::make_unique<FakeAgent>(env, "lab-b3", TokenOf("lab-b3"));
  ASSERT_TRUE(env.WaitFor(seq, "agent-registered", "lab-b3"));
  a->client->Stop();
  a.reset();
  seq = env.state->LastSeq();
  env.clock.Advance(env.options.heartbeat_window + absl::Seconds(1));
  EXPECT_EQ(env.server->monitor().CheckNow(), 1);
  auto lost = env.WaitFor(seq, "node-unhealthy", "lab-b3");
  ASSERT_TRUE(lost);
  EXPECT_THAT(lost->detail, HasSubstr("agent-lost"));
  EXPECT_FALSE(DryRun(env, 8, 8).results(0).fits());

  seq = env.state->LastSeq();
  FakeAgent back(env, "lab-b3", TokenOf("lab-b3"));
  ASSERT_TRUE(env.WaitFor(seq, "node-healthy", "lab-b3"));
  EXPECT_EQ(env.state->NodeHealthSources("lab-b3"), 0);
}

TEST(GrpcE2eTest, AgentSurvivesDaemonRestart) {
  GrpcTestEnv env(TokenOptions());
  FakeAgent a(env, "lab-a3", TokenOf("lab-a3"));
  ASSERT_TRUE(a.log.WaitFor("registered node lab-a3"));
  env.Restart();
  ASSERT_TRUE(a.log.WaitFor("registered node lab-a3", 2));
  EXPECT_TRUE(env.server->agents().Registered("lab-a3"));
  // Events raised after the restart reach the new server.
  const int64_t seq = env.state->LastSeq();
  a.gpus.Inject({0, agent::GpuEventKind::kEccUncorrectable, 0, ""});
  ASSERT_TRUE(env.WaitFor(seq, "gpu-unhealthy", "lab-a3"));
}

}  // namespace
}  // namespace topogang
