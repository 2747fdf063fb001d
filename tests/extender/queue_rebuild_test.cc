// The node set changes (GangLedger::Rebuild: nodes joined, left or were relabelled) while a
// starved gang holds GPUs in the admission queue. The queue outlives the model; its hold named
// the old model's domain and nodes. The gang must keep its place and its hold, now inside the
// new node set, and start there once it fits.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "extender/extender_service.h"
#include "k8s/gang_labels.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang {
namespace {

namespace t = testing;

constexpr auto kBindWait = std::chrono::seconds(20);

std::string Node(int i) { return t::NodeNames(i + 1).back(); }

// The API server's view of a pod: bound to `node` (or gone, with no node).
PodInfo Seen(const std::string& name, const std::string& node) {
  PodInfo p;
  p.name = name;
  p.namespace_ = "default";
  p.uid = "uid-" + name;
  p.node_name = node;
  p.phase = node.empty() ? "Succeeded" : "Running";
  p.gpus = 8;
  p.mentions_resource = true;
  return p;
}

TEST(QueueRebuildTest, AStarvedGangKeepsItsHoldInANewNodeSet) {
  const QueueOptions q = t::StarvedGangsHoldAtOnce(16);
  t::ServiceFixture f(128, absl::Seconds(10), q);  // 8 switches of 16 nodes
  // One-node jobs: two in each of switches 0-6, one in switch 7, so no switch has 16 free
  // nodes and switch 7 is the freest.
  std::vector<PodInfo> in_first_switch;
  for (int node : {0, 1, 16, 17, 32, 33, 48, 49, 64, 65, 80, 81, 96, 97, 112}) {
    const std::string gang = "s" + std::to_string(node);
    Json pod = t::MakePod(t::GangPod(gang, 1, 0, 8));
    ExtenderFilterResult r = f.FilterOffered(pod, {Node(node)});
    ASSERT_EQ(r.node_names, std::vector<std::string>{Node(node)}) << r.error;
    auto bound = f.Bind(pod, Node(node));
    ASSERT_EQ(bound.wait_for(kBindWait), std::future_status::ready);
    if (node < 16) in_first_switch.push_back(Seen(gang + "-0", Node(node)));
  }
  // A gang of 16 nodes within one switch waits, starves, and holds switch 7.
  t::PodOpts big = t::GangPod("big", 16, 0, 8);
  big.annotations[kRequiredTierKey] = "switch";
  const Json b0 = t::MakePod(big);
  EXPECT_TRUE(f.service.Filter(t::MakeArgs(b0, f.names)).node_names.empty());
  f.clock.Advance(absl::Minutes(2));
  EXPECT_TRUE(f.service.Filter(t::MakeArgs(b0, f.names)).node_names.empty());
  EXPECT_TRUE(
      f.FilterOffered(t::MakePod(t::GangPod("probe", 1, 0, 8)), {Node(120)}).node_names.empty())
      << "switch 7 is held for the starved gang";

  // The node set shrinks to switch 0, where the gang does not fit either: 14 of 16 nodes free.
  f.names = t::NodeNames(16);
  ASSERT_TRUE(f.ledger.Rebuild(t::TestCluster(16), in_first_switch).ok());
  EXPECT_TRUE(f.service.Filter(t::MakeArgs(b0, f.names)).node_names.empty());
  EXPECT_TRUE(
      f.FilterOffered(t::MakePod(t::GangPod("probe2", 1, 0, 8)), {Node(5)}).node_names.empty())
      << "the gang kept its hold: the free nodes of the new set are held for it at once";
  EXPECT_TRUE(f.state.With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());

  // The two jobs there end: the gang starts on the whole switch.
  f.ledger.PodDeleted(Seen("s0-0", ""));
  f.ledger.PodDeleted(Seen("s1-0", ""));
  std::set<std::string> nodes;
  for (int i = 0; i < 16; ++i) {
    t::PodOpts member = t::GangPod("big", 16, i, 8);
    member.annotations[kRequiredTierKey] = "switch";
    nodes.insert(f.FilterOne(t::MakePod(member)));
  }
  EXPECT_EQ(nodes.size(), 16u);
}

// A pending gang planned again at a rebuild keeps its reservation's deadline. Otherwise a
// reservation nobody comes for (pods deleted while kube-scheduler's cache still showed them, so
// it filtered them) lives on as long as node changes or relists keep coming, each granting a
// new TTL, and holds GPUs every other gang is refused.
TEST(QueueRebuildTest, APendingGangKeepsItsReservationDeadlineAcrossARebuild) {
  t::ServiceFixture f(16);  // reservation TTL 30 s
  const Json g0 = t::MakePod(t::GangPod("g", 2, 0, 8));
  ASSERT_FALSE(f.FilterOne(g0).empty());
  ASSERT_EQ(f.UsedGpus(), 16) << "both members' GPUs reserved";
  f.clock.Advance(absl::Seconds(20));
  ASSERT_TRUE(f.ledger.Rebuild(t::TestCluster(16), {}).ok());
  ASSERT_EQ(f.UsedGpus(), 16) << "re-planned on the new model";
  f.clock.Advance(absl::Seconds(15));  // 35 s after the reservation, 15 s after the rebuild
  for (int i = 0; i < 200 && f.UsedGpus() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(f.UsedGpus(), 0) << "the reservation outlived its TTL";
}

// ... but a gang whose member waited at bind is told to retry by the rebuild (its held bind
// names the old model), and comes back only after kube-scheduler's backoff: that member gets a
// fresh TTL to come back in, as a health re-plan gives one.
TEST(QueueRebuildTest, AGangWhoseMemberWaitedAtBindGetsAFreshTtlAtARebuild) {
  t::ServiceFixture f(16);  // reservation TTL 30 s
  const Json g0 = t::MakePod(t::GangPod("g", 2, 0, 8));
  const std::string node = f.FilterOne(g0);
  std::future<std::string> held = f.Bind(g0, node);
  ASSERT_EQ(held.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  f.clock.Advance(absl::Seconds(20));
  ASSERT_TRUE(f.ledger.Rebuild(t::TestCluster(16), {}).ok());
  ASSERT_EQ(held.wait_for(kBindWait), std::future_status::ready);
  EXPECT_NE(held.get().find("retry"), std::string::npos);
  f.clock.Advance(absl::Seconds(15));       // 35 s after the reservation, 15 s after the rebuild
  absl::SleepFor(absl::Milliseconds(200));  // ten sweeps of the worker
  EXPECT_EQ(f.UsedGpus(), 16) << "the reservation expired before its member could come back";
}

}  // namespace
}  // namespace topogang
