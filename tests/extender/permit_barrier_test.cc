// How topogang's bind barrier composes with kube-scheduler's GangScheduling plugin, which holds
// the members of an upstream PodGroup at Permit, before the extender's bind verb.
//  - gang_barrier: auto (default): a gang named through scheduling.k8s.io binds each member as it
//    arrives (the members already passed Permit together; a second hold could only send them
//    back through it), while topogang still planned and reserved the whole gang at filter;
//    unless a member reaches bind before all were filtered (nothing held them): then topogang's
//    own barrier holds that gang.
//  - gang_barrier: topogang: topogang's own barrier holds them too (GangScheduling disabled).
// Gangs named any other way keep topogang's barrier in both settings.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "daemon/gang_ledger.h"
#include "extender/extender_service.h"
#include "tests/support/service_util.h"
#include "tests/support/test_util.h"

namespace topogang::testing {
namespace {

using Barrier = GangLedgerOptions::GangBarrier;

// One upstream PodGroup "train" (minCount 3) in namespace "ml".
class OnePodGroup : public GroupObjectLookup {
 public:
  Result Find(GroupKind kind, const std::string& ns, const std::string& name) const override {
    Result r;
    if (kind != GroupKind::kPodGroup || ns != "ml" || name != "train") return r;
    r.state = State::kFound;
    r.object.kind = kind;
    r.object.namespace_ = ns;
    r.object.name = name;
    r.object.gang = true;
    r.object.min_count = 3;
    return r;
  }
};

struct Fixture {
  explicit Fixture(Barrier barrier)
      : state(GangScheduler(TestCluster(16)), clock),
        ledger(state, binder, Options(barrier)),
        service(ledger) {
    ledger.SetGroupLookup(&groups);
  }
  static GangLedgerOptions Options(Barrier barrier) {
    GangLedgerOptions o;
    o.bind_window = absl::Seconds(10);
    o.tick = absl::Milliseconds(20);
    o.sweep = absl::Milliseconds(20);
    o.gang_barrier = barrier;
    return o;
  }
  std::string Filter(const Json& pod) {
    ExtenderFilterResult r = service.Filter(MakeArgs(pod, NodeNames(16)));
    EXPECT_EQ(r.error, "");
    return r.node_names.size() == 1 ? r.node_names[0] : "";
  }
  FakeClock clock;
  DaemonState state;
  MemoryBinder binder;
  OnePodGroup groups;
  GangLedger ledger;
  ExtenderService service;
};

Json UpstreamPod(int i) {
  PodOpts o;
  o.name = absl::StrCat("train-", i);
  o.ns = "ml";
  o.gpus = 8;
  Json p = MakePod(o);
  p["spec"]["schedulingGroup"] = {{"podGroupName", "train"}};
  return p;
}

bool Answered(std::future<std::string>& f, int ms) {
  return f.wait_for(std::chrono::milliseconds(ms)) == std::future_status::ready;
}

TEST(PermitBarrier, AutoBindsUpstreamGangMembersAsTheyArrive) {
  Fixture f(Barrier::kAuto);
  std::vector<Json> pods;
  std::vector<std::string> nodes;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(UpstreamPod(i));
    nodes.push_back(f.Filter(pods.back()));
    ASSERT_NE(nodes.back(), "");
  }
  // The whole gang was reserved at the first filter (24 GPUs), as for any gang.
  EXPECT_EQ(UsedGpus(f.state), 24);
  // The first member binds without waiting for the others: kube-scheduler's Permit already
  // held the gang together.
  auto first = BindPod(f.service, pods[0], nodes[0]);
  ASSERT_TRUE(Answered(first, 5000));
  EXPECT_EQ(first.get(), "");
  for (int i = 1; i < 3; ++i) {
    auto b = BindPod(f.service, pods[i], nodes[i]);
    ASSERT_TRUE(Answered(b, 5000));
    EXPECT_EQ(b.get(), "");
  }
  EXPECT_EQ(f.binder.Bindings().size(), 3u);
  EXPECT_EQ(UsedGpus(f.state), 24);
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
  EXPECT_EQ(f.ledger.GetStats().held_binds, 0);
}

// The chart's kube-scheduler does not enable GangScheduling (it needs the GenericWorkload
// feature gate): a member then reaches bind while others have not even been filtered. Under auto
// that gang falls back to topogang's barrier instead of starting partly.
TEST(PermitBarrier, AutoFallsBackToItsOwnBarrierWhenNothingHeldTheGangAtPermit) {
  Fixture f(Barrier::kAuto);
  std::mutex mu;
  std::vector<GangNotice> notices;
  f.ledger.SetNotify([&](const GangNotice& n) {
    std::lock_guard<std::mutex> lock(mu);
    notices.push_back(n);
  });
  std::vector<Json> pods;
  for (int i = 0; i < 3; ++i) pods.push_back(UpstreamPod(i));
  const std::string n0 = f.Filter(pods[0]);
  auto first = BindPod(f.service, pods[0], n0);
  EXPECT_FALSE(Answered(first, 150)) << "held: members 1 and 2 were never filtered";
  EXPECT_TRUE(f.binder.Bindings().empty());
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(notices.empty());
    EXPECT_EQ(notices.back().reason, "GangBarrierFallback");
    EXPECT_EQ(notices.back().type, "Warning");
  }
  std::vector<std::future<std::string>> rest;
  for (int i = 1; i < 3; ++i) rest.push_back(BindPod(f.service, pods[i], f.Filter(pods[i])));
  ASSERT_TRUE(Answered(first, 5000));
  EXPECT_EQ(first.get(), "");
  for (auto& b : rest) {
    ASSERT_TRUE(Answered(b, 5000));
    EXPECT_EQ(b.get(), "");
  }
  EXPECT_EQ(f.binder.Bindings().size(), 3u);
  EXPECT_EQ(f.ledger.GetStats().running_gangs, 1);
}

TEST(PermitBarrier, TopogangModeHoldsUpstreamGangAtItsOwnBarrier) {
  Fixture f(Barrier::kTopogang);
  std::vector<Json> pods;
  std::vector<std::string> nodes;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(UpstreamPod(i));
    nodes.push_back(f.Filter(pods.back()));
  }
  auto first = BindPod(f.service, pods[0], nodes[0]);
  auto second = BindPod(f.service, pods[1], nodes[1]);
  EXPECT_FALSE(Answered(first, 150));  // held: the third member has not arrived
  EXPECT_TRUE(f.binder.Bindings().empty());
  auto third = BindPod(f.service, pods[2], nodes[2]);
  for (auto* b : {&first, &second, &third}) {
    ASSERT_TRUE(Answered(*b, 5000));
    EXPECT_EQ(b->get(), "");
  }
  EXPECT_EQ(f.binder.Bindings().size(), 3u);
}

TEST(PermitBarrier, AutoKeepsTopogangBarrierForGangsNamedOtherwise) {
  Fixture f(Barrier::kAuto);
  Json a = MakePod(GangPod("g", 2, 0, 8)), b = MakePod(GangPod("g", 2, 1, 8));
  std::string na = f.Filter(a), nb = f.Filter(b);
  auto first = BindPod(f.service, a, na);
  EXPECT_FALSE(Answered(first, 150));
  auto second = BindPod(f.service, b, nb);
  ASSERT_TRUE(Answered(first, 5000));
  ASSERT_TRUE(Answered(second, 5000));
  EXPECT_EQ(first.get(), "");
  EXPECT_EQ(second.get(), "");
}

}  // namespace
}  // namespace topogang::testing
