// The verb logic without HTTP: gangs reserved whole on the first filter, members steered to their
// slots, the bind barrier (all together, or all failed and released on expiry), interleaved
// gangs, re-planning on cordon, preemption that never splits a running gang, hostile pods.
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "extender/extender_service.h"
#include "k8s/runtime_estimate.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

using testing::GangPod;
using testing::MakeArgs;
using testing::MakePod;
using testing::NodeNames;
using testing::PodOpts;
using testing::ReadWire;
using testing::TestCluster;

using testing::ExpectCovers;
using testing::FinishedPod;
using Fixture = testing::ServiceFixture;

constexpr auto kWait = std::chrono::seconds(20);

TEST(ServiceTest, PodWithoutGpuOrGangPassesEveryNode) {
  Fixture f;
  PodOpts o;
  o.gpus = 0;
  ExtenderArgs args = MakeArgs(MakePod(o), f.names);
  ExtenderFilterResult r = f.service.Filter(args);
  EXPECT_EQ(r.node_names, f.names);
  EXPECT_TRUE(r.failed.empty() && r.failed_unresolvable.empty());
  auto bound = f.Bind(MakePod(o), "gpu-node-003");
  ASSERT_EQ(bound.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(bound.get(), "");
  EXPECT_EQ(f.UsedGpus(), 0);
}

TEST(ServiceTest, CapturedSingleGpuPodIsAGangOfOne) {
  Fixture f;
  auto args = ParseExtenderArgs(ReadWire("bind-api-mode/filter-001-request.json"));
  ASSERT_TRUE(args.ok());
  ExtenderFilterResult r = f.service.Filter(*args);
  ExpectCovers(*args, r);
  ASSERT_EQ(r.node_names.size(), 1u);
  auto prio = f.service.Prioritize(
      *ParseExtenderArgs(ReadWire("bind-api-mode/prioritize-001-request.json")));
  ASSERT_TRUE(prio.ok());
  int tens = 0;
  for (const HostPriority& h : *prio) {
    EXPECT_TRUE(h.score == 0 || h.score == 10);
    if (h.score == 10) {
      ++tens;
      EXPECT_EQ(h.host, r.node_names[0]);
    }
  }
  EXPECT_EQ(tens, 1);
  EXPECT_EQ(f.UsedGpus(), 1);
  // The captured bind names its own node; ours steered elsewhere, so bind to ours.
  auto b = ParseBindingArgs(ReadWire("bind-api-mode/bind-001-request.json"));
  ASSERT_TRUE(b.ok());
  b->node = r.node_names[0];
  std::promise<std::string> done;
  f.service.Bind(*b, [&](const ExtenderBindingResult& res) { done.set_value(res.error); });
  auto fut = done.get_future();
  ASSERT_EQ(fut.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(fut.get(), "");
  EXPECT_EQ(f.binder.Bindings().at("default/gpu-pod-2"), r.node_names[0]);
}

TEST(ServiceTest, SixteenByEightGangBindsAllTogether) {
  Fixture f;
  std::vector<std::future<std::string>> binds;
  std::set<std::string> nodes;
  for (int i = 0; i < 16; ++i) {
    Json pod = MakePod(GangPod("train", 16, i, 8));
    std::string node = f.FilterOne(pod);
    EXPECT_EQ(f.FilterOne(pod), node) << "a retried filter keeps its slot";
    auto prio = f.service.Prioritize(MakeArgs(pod, f.names));
    ASSERT_TRUE(prio.ok());
    for (const HostPriority& h : *prio) EXPECT_EQ(h.score, h.host == node ? 10 : 0);
    nodes.insert(node);
    EXPECT_EQ(f.UsedGpus(), 128) << "the whole gang is reserved on the first filter";
    binds.push_back(f.Bind(pod, node));
    if (i < 15) {
      EXPECT_EQ(binds.back().wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
      EXPECT_TRUE(f.binder.Bindings().empty()) << "no member binds before the last arrives";
    }
  }
  EXPECT_EQ(nodes.size(), 16u);
  for (auto& b : binds) {
    ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(b.get(), "");
  }
  EXPECT_EQ(f.binder.Bindings().size(), 16u);
  const GangRecord* rec = nullptr;
  f.state.With([&](GangScheduler& s) {
    rec = s.Find("default/train");
    return 0;
  });
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->state, GangState::kRunning);
  // 16 nodes of 8 GPUs in one switch (16 nodes per switch in the test cluster).
  std::set<std::string> switches;
  for (const auto& n : nodes)
    switches.insert(n.substr(0, 10) + std::to_string((std::stoi(n.substr(9)) / 16)));
  EXPECT_EQ(switches.size(), 1u);
  f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).IgnoreError();
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// kube-scheduler's own filters reject the reserved node this time (it became full or tainted to
// them, or a model rebuild re-planned the pod without the nodes its offers had excluded): the pod
// is planned again inside the offer, as a multi-pod gang is (GangLifecycleTest.ARetryWhoseSlotIs
// ...). Until 2026-11-30 it was refused on every node as unresolvable, and kube-scheduler parked
// it until the next cluster event or for 5 minutes while its reservation ran out.
TEST(ServiceTest, RetriedFilterWithoutTheReservedNodePlansThePodAgainInsideTheOffer) {
  Fixture f(8);
  PodOpts solo;
  solo.name = "solo";
  solo.gpus = 8;
  const Json pod = MakePod(solo);
  const std::string node = f.FilterOne(pod);
  ASSERT_FALSE(node.empty());
  std::vector<std::string> others;
  for (const std::string& n : f.names) {
    if (n != node) others.push_back(n);
  }
  ExtenderArgs args = MakeArgs(pod, others);
  ExtenderFilterResult r = f.service.Filter(args);
  ExpectCovers(args, r);
  ASSERT_EQ(r.node_names.size(), 1u)
      << (r.failed_unresolvable.empty() ? r.error : r.failed_unresolvable[0].second);
  const std::string moved = r.node_names[0];
  EXPECT_NE(moved, node);
  // One reservation, on the new node: the old one was given back.
  EXPECT_EQ(f.UsedGpus(), 8);
  // Offered everything again: steered to where it is now.
  EXPECT_EQ(f.FilterOne(pod), moved);
}

TEST(ServiceTest, GangThatCannotFitFailsEveryNodeWithTheReason) {
  Fixture f(16);
  Json pod = MakePod(GangPod("huge", 17, 0, 8));
  ExtenderArgs args = MakeArgs(pod, f.names);
  ExtenderFilterResult r = f.service.Filter(args);
  ExpectCovers(args, r);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.node_names.empty());
  ASSERT_EQ(r.failed_unresolvable.size(), 16u);
  EXPECT_NE(r.failed_unresolvable[0].second.find("cannot be placed"), std::string::npos)
      << r.failed_unresolvable[0].second;
  EXPECT_NE(r.failed_unresolvable[0].second.find("17 pods x 8 GPUs"), std::string::npos);
  EXPECT_EQ(f.UsedGpus(), 0);
}

// kube-scheduler gives up on a bind after httpTimeout, and its backoff (1 s doubling to 10 s)
// puts members out of phase: a held request is answered before that, but the member keeps its
// slot and its arrival, and the gang binds whole as soon as the last member arrives, including
// members whose requests were answered meanwhile.
TEST(ServiceTest, SlowMembersAreAnsweredButKeepTheReservationAndBindWhole) {
  Fixture f(16, absl::Milliseconds(100));
  Json p0 = MakePod(GangPod("g", 3, 0, 8));
  Json p1 = MakePod(GangPod("g", 3, 1, 8));
  Json p2 = MakePod(GangPod("g", 3, 2, 8));
  std::string n0 = f.FilterOne(p0);
  std::string n1 = f.FilterOne(p1);
  EXPECT_EQ(f.UsedGpus(), 24);
  auto b0 = f.Bind(p0, n0);
  auto b1 = f.Bind(p1, n1);
  ASSERT_EQ(b0.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(b1.wait_for(kWait), std::future_status::ready);
  std::string e0 = b0.get();
  EXPECT_NE(e0.find("waiting for the rest of gang default/g (3 members) to reach bind"),
            std::string::npos)
      << e0;
  EXPECT_NE(b1.get(), "");
  EXPECT_TRUE(f.binder.Bindings().empty()) << "no member binds before the whole gang can";
  EXPECT_EQ(f.UsedGpus(), 24) << "the reservation is kept for the members still to come";
  for (const DecisionEvent& e : f.state.WaitEvents(0, absl::Now(), 1000)) {
    EXPECT_FALSE(e.kind == "expire" && e.gang == "default/g");
  }
  // Member 0 retries after its backoff (filter steers it to the same node), member 2 arrives
  // last: all three are bound, member 1 although its request was answered long ago.
  EXPECT_EQ(f.FilterOne(p0), n0);
  auto again0 = f.Bind(p0, n0);
  std::string n2 = f.FilterOne(p2);
  auto b2 = f.Bind(p2, n2);
  ASSERT_EQ(b2.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b2.get(), "");
  ASSERT_EQ(again0.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(again0.get(), "");
  // Member 1 has no request waiting: its binding finishes on its own, on the pool.
  for (int i = 0; i < 2000 && f.ledger.GetStats().running_gangs != 1; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  auto bound = f.binder.Bindings();
  ASSERT_EQ(bound.size(), 3u);
  EXPECT_EQ(bound["default/g-0"], n0);
  EXPECT_EQ(bound["default/g-1"], n1);
  EXPECT_EQ(bound["default/g-2"], n2);
  // Member 1's own retry finds it bound already: success, same node.
  EXPECT_EQ(f.FilterOne(p1), n1);
  auto again1 = f.Bind(p1, n1);
  ASSERT_EQ(again1.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(again1.get(), "");
  EXPECT_EQ(f.UsedGpus(), 24);
}

// With no member arriving for the reservation TTL, the reservation goes (one expire event), and
// the gang starts over on its next filter.
TEST(ServiceTest, ReservationWithoutProgressExpiresAfterItsTtl) {
  Fixture f(16, absl::Milliseconds(100));
  Json p0 = MakePod(GangPod("g", 3, 0, 8));
  std::string n0 = f.FilterOne(p0);
  EXPECT_EQ(f.UsedGpus(), 24);
  f.clock.Advance(absl::Seconds(20));
  EXPECT_EQ(f.FilterOne(MakePod(GangPod("g", 3, 1, 8))).empty(), false);  // progress: TTL anew
  f.clock.Advance(absl::Seconds(20));
  absl::SleepFor(absl::Milliseconds(100));  // a few sweeps (every 20 ms here)
  EXPECT_EQ(f.UsedGpus(), 24) << "40 s after the reservation, but 20 s after the last member";
  f.clock.Advance(absl::Seconds(15));
  for (int i = 0; i < 300 && f.UsedGpus() != 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(f.UsedGpus(), 0);
  int expired = 0;
  for (const DecisionEvent& e : f.state.WaitEvents(0, absl::Now(), 1000)) {
    expired += e.kind == "expire" && e.gang == "default/g";
  }
  EXPECT_EQ(expired, 1);
  EXPECT_FALSE(f.FilterOne(p0).empty());  // starts over
  EXPECT_EQ(f.UsedGpus(), 24);
}

TEST(ServiceTest, InterleavedGangsNeverSplitOrDeadlock) {
  Fixture f(4);
  Json a0 = MakePod(GangPod("a", 2, 0, 8)), a1 = MakePod(GangPod("a", 2, 1, 8));
  Json b0 = MakePod(GangPod("b", 2, 0, 8)), b1 = MakePod(GangPod("b", 2, 1, 8));
  std::string na0 = f.FilterOne(a0);
  std::string nb0 = f.FilterOne(b0);
  std::string na1 = f.FilterOne(a1);
  std::string nb1 = f.FilterOne(b1);
  std::set<std::string> all = {na0, na1, nb0, nb1};
  EXPECT_EQ(all.size(), 4u) << "each gang's reservation is whole and disjoint";
  // A third gang finds nothing: reserved GPUs are never offered to others.
  ExtenderArgs args = MakeArgs(MakePod(GangPod("c", 1, 0, 1)), f.names);
  ExtenderFilterResult r = f.service.Filter(args);
  EXPECT_TRUE(r.node_names.empty());
  auto fa0 = f.Bind(a0, na0), fb0 = f.Bind(b0, nb0), fa1 = f.Bind(a1, na1), fb1 = f.Bind(b1, nb1);
  for (auto* fut : {&fa0, &fb0, &fa1, &fb1}) {
    ASSERT_EQ(fut->wait_for(kWait), std::future_status::ready);
    EXPECT_EQ(fut->get(), "");
  }
  EXPECT_EQ(f.binder.Bindings().size(), 4u);
}

TEST(ServiceTest, MembersDisagreeingOnGangSizeGetAnError) {
  Fixture f;
  f.FilterOne(MakePod(GangPod("g", 4, 0, 8)));
  ExtenderArgs args = MakeArgs(MakePod(GangPod("g", 5, 1, 8)), f.names);
  ExtenderFilterResult r = f.service.Filter(args);
  EXPECT_NE(r.error.find("all members must carry the same values"), std::string::npos) << r.error;
  ExpectCovers(args, r);
  // Too many members for the gang.
  for (int i = 1; i < 4; ++i) f.FilterOne(MakePod(GangPod("g", 4, i, 8)));
  ExtenderArgs extra = MakeArgs(MakePod(GangPod("g", 4, 9, 8)), f.names);
  r = f.service.Filter(extra);
  EXPECT_TRUE(r.node_names.empty());
  ASSERT_FALSE(r.failed_unresolvable.empty());
  EXPECT_NE(r.failed_unresolvable[0].second.find("one too many"), std::string::npos);
  // An error, so kube-scheduler retries it after backoff: it may be a replacement for a member
  // whose deletion topogangd has not seen yet.
  EXPECT_NE(r.error.find("one too many"), std::string::npos) << r.error;
}

TEST(ServiceTest, HostilePodsAreErrorsAndTheServiceStaysHealthy) {
  Fixture f;
  std::vector<Json> bad = {
      Json::parse(
          R"({"metadata":{"name":"x"},"spec":{"containers":[{"resources":{"requests":{"nvidia.com/gpu":"1000000"}}}]}})"),
      Json::parse(R"({"metadata":{"name":"x"},"spec":{"containers":"nope"}})"),
      Json::parse(R"({"metadata":{"name":"x","labels":{"topogang.io/gang":"g"}},"spec":{}})"),
      MakePod(GangPod("zero", 2, 0, 0)),
  };
  for (const Json& pod : bad) {
    ExtenderArgs args = MakeArgs(pod, f.names);
    ExtenderFilterResult r = f.service.Filter(args);
    EXPECT_NE(r.error, "") << pod.dump();
    ExpectCovers(args, r);
  }
  // Unknown nodes in the request are answered (failed), never invented.
  std::vector<std::string> names = {"no-such-node", "gpu-node-001"};
  ExtenderArgs args = MakeArgs(MakePod(GangPod("ok", 1, 0, 1)), names);
  ExtenderFilterResult r = f.service.Filter(args);
  ExpectCovers(args, r);
  // And the daemon still schedules.
  EXPECT_FALSE(f.FilterOne(MakePod(GangPod("fine", 2, 0, 4))).empty());
  // A bind for a pod topogang never reserved is refused, not bound blindly.
  auto b = f.Bind(MakePod(GangPod("stranger", 2, 0, 4)), "gpu-node-000");
  ASSERT_EQ(b.wait_for(kWait), std::future_status::ready);
  EXPECT_NE(b.get().find("no reservation"), std::string::npos);
}

TEST(ServiceTest, CordonDuringPendingGangReplans) {
  Fixture f(8);
  Json p0 = MakePod(GangPod("g", 2, 0, 8)), p1 = MakePod(GangPod("g", 2, 1, 8));
  std::string n0 = f.FilterOne(p0);
  ASSERT_TRUE(f.state.SetNodeHealth(n0, HealthSource::kKubeCordon, true, "cordoned").ok());
  // The reservation moved off the cordoned node; a bind to the old node is refused...
  auto stale = f.Bind(p0, n0);
  ASSERT_EQ(stale.wait_for(kWait), std::future_status::ready);
  EXPECT_NE(stale.get().find("moved"), std::string::npos);
  // ... and the retried filter steers the same pod to its new node.
  std::string m0 = f.FilterOne(p0);
  EXPECT_NE(m0, n0);
  std::string m1 = f.FilterOne(p1);
  EXPECT_NE(m1, n0);
  auto b0 = f.Bind(p0, m0), b1 = f.Bind(p1, m1);
  ASSERT_EQ(b0.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(b1.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(b0.get(), "");
  EXPECT_EQ(b1.get(), "");
}

TEST(ServiceTest, PreemptNeverSplitsARunningGang) {
  Fixture f(8);
  Json g0 = MakePod(GangPod("run", 2, 0, 4)), g1 = MakePod(GangPod("run", 2, 1, 4));
  std::string n0 = f.FilterOne(g0), n1 = f.FilterOne(g1);
  auto b0 = f.Bind(g0, n0), b1 = f.Bind(g1, n1);
  ASSERT_EQ(b0.wait_for(kWait), std::future_status::ready);
  ASSERT_EQ(b1.wait_for(kWait), std::future_status::ready);
  PodOpts solo;
  solo.name = "solo";
  solo.gpus = 2;
  Json s = MakePod(solo);
  std::string ns = f.FilterOne(s);
  auto bs = f.Bind(s, ns);
  ASSERT_EQ(bs.wait_for(kWait), std::future_status::ready);
  ExtenderPreemptionArgs args;
  args.pod = MakePod(GangPod("x", 1, 0, 8));
  args.victims[n0].uids = {"uid-run-0"};
  args.victims[ns].uids = {"uid-solo"};
  args.victims["gpu-node-007"].uids = {};
  ExtenderPreemptionResult r = f.service.Preempt(args);
  EXPECT_EQ(r.victims.count(n0), n0 == ns ? 0u : 0u);
  if (n0 != ns) {
    ASSERT_EQ(r.victims.count(ns), 1u);
    EXPECT_EQ(r.victims.at(ns).uids, std::vector<std::string>{"uid-solo"});
  }
  EXPECT_EQ(r.victims.count("gpu-node-007"), 1u);
}

TEST(ServiceTest, StarvedLargeGangGetsGpusHeldAgainstSmallOnes) {
  QueueOptions q;
  q.starvation_threshold = absl::Minutes(1);
  q.hold_min_gpus = 16;
  Fixture f(4, absl::Seconds(10), q);
  // A small job runs on one node.
  Json a = MakePod(GangPod("a", 1, 0, 8));
  std::string na = f.FilterOne(a);
  auto ba = f.Bind(a, na);
  ASSERT_EQ(ba.wait_for(kWait), std::future_status::ready);
  // The big gang needs the whole cluster: it waits.
  Json b0 = MakePod(GangPod("big", 4, 0, 8));
  ExtenderFilterResult r = f.service.Filter(MakeArgs(b0, f.names));
  EXPECT_TRUE(r.node_names.empty());
  // Before the threshold, small gangs backfill freely.
  Json c = MakePod(GangPod("c", 1, 0, 8));
  std::string nc = f.FilterOne(c);
  auto bc = f.Bind(c, nc);
  ASSERT_EQ(bc.wait_for(kWait), std::future_status::ready);
  f.ledger.PodDeleted(FinishedPod("c-0"));
  // Past the threshold the big gang's GPUs are held: the next small gang is refused...
  f.clock.Advance(absl::Minutes(2));
  r = f.service.Filter(MakeArgs(b0, f.names));
  EXPECT_TRUE(r.node_names.empty());
  Json d = MakePod(GangPod("d", 1, 0, 8));
  r = f.service.Filter(MakeArgs(d, f.names));
  EXPECT_TRUE(r.node_names.empty()) << "GPUs held for the starved gang are not offered";
  // ... and once the small running job ends, the big gang starts.
  f.ledger.PodDeleted(FinishedPod("a-0"));
  std::set<std::string> nodes;
  for (int i = 0; i < 4; ++i) nodes.insert(f.FilterOne(MakePod(GangPod("big", 4, i, 8))));
  EXPECT_EQ(nodes.size(), 4u);
}

// topogang.io/runtime-estimate and spec.activeDeadlineSeconds reach the gang queue: the estimate
// of a running gang tells when a hold is due, and a gang whose activeDeadlineSeconds ends before
// that runs on the held GPUs meanwhile (Slurm's backfill rule). One that says nothing, only
// estimates (nothing enforces it), or may run later, does not; a malformed estimate is an error.
TEST(ServiceTest, GangsThatEndBeforeAHoldIsDueRunOnItsGpus) {
  QueueOptions q;
  q.starvation_threshold = absl::Minutes(1);
  q.hold_min_gpus = 16;
  Fixture f(4, absl::Seconds(10), q);
  auto with = [](PodOpts o, const std::string& estimate) {
    o.annotations[kRuntimeEstimateKey] = estimate;
    return o;
  };
  // A small job that says it runs an hour holds one node: the hold is due when it ends.
  Json a = MakePod(with(GangPod("a", 1, 0, 8), "1h"));
  std::string na = f.FilterOne(a);
  auto ba = f.Bind(a, na);
  ASSERT_EQ(ba.wait_for(kWait), std::future_status::ready);
  Json big = MakePod(GangPod("big", 4, 0, 8));
  EXPECT_TRUE(f.service.Filter(MakeArgs(big, f.names)).node_names.empty());
  f.clock.Advance(absl::Minutes(2));
  EXPECT_TRUE(f.service.Filter(MakeArgs(big, f.names)).node_names.empty());
  // No estimate: refused (it might run past the hour).
  ExtenderFilterResult r = f.service.Filter(MakeArgs(MakePod(GangPod("e", 1, 0, 8)), f.names));
  EXPECT_TRUE(r.node_names.empty() && r.error.empty()) << r.error;
  // A two-hour activeDeadlineSeconds: refused too (it may run past the hour).
  Json late = MakePod(GangPod("late", 1, 0, 8));
  late["spec"]["activeDeadlineSeconds"] = 7200;
  EXPECT_TRUE(f.service.Filter(MakeArgs(late, f.names)).node_names.empty());
  // Malformed: a clear error naming the key.
  r = f.service.Filter(MakeArgs(MakePod(with(GangPod("bad", 1, 0, 8), "soon")), f.names));
  EXPECT_NE(r.error.find(kRuntimeEstimateKey), std::string::npos) << r.error;
  // "30m" with nothing to enforce it: refused.
  r = f.service.Filter(MakeArgs(MakePod(with(GangPod("says", 1, 0, 8), "30m")), f.names));
  EXPECT_TRUE(r.node_names.empty() && r.error.empty()) << r.error;
  // A 40-minute activeDeadlineSeconds ends before the hold is due: it runs on a held node now,
  // and so does a second one.
  Json d1 = MakePod(GangPod("d1", 1, 0, 8)), d2 = MakePod(GangPod("d2", 1, 0, 8));
  d1["spec"]["activeDeadlineSeconds"] = 2400;
  d2["spec"]["activeDeadlineSeconds"] = 2400;
  std::string n1 = f.FilterOne(d1), n2 = f.FilterOne(d2);
  EXPECT_NE(n1, na);
  EXPECT_NE(n2, na);
  EXPECT_NE(n1, n2);
}

}  // namespace
}  // namespace topogang
