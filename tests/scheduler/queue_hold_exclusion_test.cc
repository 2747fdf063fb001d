// A starved gang's hold goes where the gang may run, and may wait for nodes busy now. In the
// daemon a gang is planned without every node kube-scheduler did not offer its pods, and those
// are of two kinds: refused by its own filters (a node selector naming one pool, a taint it does
// not tolerate), which the gang may never use, and full (NodeResourcesFit), which it may use once
// they free. GangQueue::Schedule takes them apart: `exclude` for planning, `hold_exclude` (the
// first kind only) for the hold.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/queue_policy.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

namespace qt = queue_test;

TEST(GangQueueHoldExclusion, AHoldLeavesTheNodesTheGangMayNotUseAndWaitsForBusyOnes) {
  // Two leaves of two nodes. Leaf 0 is empty, leaf 1 has a job on node 2. The gang's pods may
  // only go to leaf 1 (nodes 0 and 1 refused), where it does not fit yet; node 2 is not offered
  // either, being full.
  GangScheduler s(testing::MakeCluster(1, 1, 2, 2, 8));
  qt::RunOn(s, "r2", 2, 0, 8);
  QueueOptions o = qt::HoldAtOnce();
  o.hold_min_gpus = 8;
  GangQueue q(o);
  const absl::Time t = absl::UnixEpoch();
  const auto exclude = [](const GangSpec& g) {
    return g.name == "g" ? std::vector<int>{0, 1, 2} : std::vector<int>{};
  };
  const auto hold_exclude = [](const GangSpec& g) {
    return g.name == "g" ? std::vector<int>{0, 1} : std::vector<int>{};
  };
  ASSERT_TRUE(q.Enqueue(qt::Gang("g", 2, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t, exclude, hold_exclude).empty());
  EXPECT_EQ(qt::HeldNodes(s, "g"), (std::vector<int>{3}))
      << "neither the empty leaf it cannot use nor no hold at all (node 2 is only busy)";
  // So the empty leaf still serves others, and node 3 waits for the gang.
  ASSERT_TRUE(q.Enqueue(qt::Gang("other", 2, 8), t + absl::Seconds(1)).ok());
  EXPECT_EQ(q.Schedule(s, t + absl::Seconds(1), exclude, hold_exclude),
            (std::vector<std::string>{"other"}));
  EXPECT_EQ(s.Find("other")->placement.Nodes(), (std::vector<int>{0, 1}));
  // Node 2 frees (and is offered from now on): the gang starts on its leaf.
  ASSERT_TRUE(s.Release("r2").ok());
  const auto now_exclude = [](const GangSpec& g) {
    return g.name == "g" ? std::vector<int>{0, 1} : std::vector<int>{};
  };
  EXPECT_EQ(q.Schedule(s, t + absl::Seconds(2), now_exclude, hold_exclude),
            (std::vector<std::string>{"g"}));
  EXPECT_EQ(s.Find("g")->placement.Nodes(), (std::vector<int>{2, 3}));
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangQueueHoldExclusion, AGangThatNamesNoSkuHoldsNodesOfOneSku) {
  // Leaves of two 8-GPU nodes, SKUs by leaf in turn: nodes 0-1 and 4-5 H100, 2-3 A100. `big`
  // (3 x 8) names no SKU and may not mix them, so only the H100 nodes can ever hold it, across
  // two leaves: its hold domain is the spine, where the A100 nodes are the emptiest. Jobs on
  // nodes 0 and 4 keep it from starting now.
  GangScheduler s(testing::MakeCluster(1, 1, 3, 2, 8, "[H100, A100]"));
  for (int n : {0, 4}) qt::RunOn(s, "r" + std::to_string(n), n, 0, 8);
  QueueOptions o = qt::HoldAtOnce();
  o.hold_min_gpus = 8;
  GangQueue q(o);
  ASSERT_TRUE(q.Enqueue(qt::Gang("big", 3, 8), absl::UnixEpoch()).ok());
  EXPECT_TRUE(q.Schedule(s, absl::UnixEpoch()).empty());
  const std::vector<int> held = qt::HeldNodes(s, "big");
  EXPECT_FALSE(held.empty());
  for (int n : held) EXPECT_EQ(s.cluster().SkuName(s.cluster().node(n).sku), "H100") << n;
  // ... and once the H100 jobs end it starts there.
  for (int n : {0, 4}) ASSERT_TRUE(s.Release("r" + std::to_string(n)).ok());
  EXPECT_EQ(q.Schedule(s, absl::UnixEpoch() + absl::Seconds(1)), (std::vector<std::string>{"big"}));
  EXPECT_TRUE(s.CheckInvariants().ok());
}

}  // namespace
}  // namespace topogang
