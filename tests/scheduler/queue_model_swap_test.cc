// The daemon swaps in a scheduler built for a new node set (nodes joined, left or were
// relabelled: GangLedger::Rebuild) under a queue that keeps waiting. A hold's domain and claim
// are indexes into the old model; the queue must choose them again in the new one, keep every
// waiting gang and its place, and keep a holding gang holding.
#include <gtest/gtest.h>

#include <string>

#include "scheduler/queue_policy.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

namespace qt = queue_test;
using testing::MakeCluster;

TEST(GangQueueModelSwap, AHoldInTheOldModelIsChosenAgainInASmallerOne) {
  GangScheduler big(MakeCluster(1, 4, 4, 4, 8));  // 64 nodes in 16 leaves
  QueueOptions opts = qt::HoldAtOnce();
  opts.hold_min_gpus = 8;
  GangQueue q(opts);
  absl::Time t = absl::UnixEpoch();
  // Every node busy but the last leaf's, half free: the hold goes to that leaf, a domain index
  // the small model below does not have.
  for (int n = 0; n < 64; ++n) qt::RunOn(big, "r" + std::to_string(n), n, 0, n >= 60 ? 4 : 8);
  ASSERT_TRUE(q.Enqueue(qt::Gang("big", 2, 8), t).ok());
  EXPECT_TRUE(q.Schedule(big, t).empty());
  ASSERT_EQ(q.waiting().size(), 1u);
  GangScheduler small(MakeCluster(1, 1, 1, 4, 8));  // 4 nodes
  ASSERT_GE(q.waiting()[0].hold_domain, small.cluster().num_domains());

  // Three of its nodes busy: the gang does not fit, and holds the free one.
  for (int n = 0; n < 3; ++n) qt::RunOn(small, "s" + std::to_string(n), n, 0, 8);
  ASSERT_TRUE(q.Enqueue(qt::Gang("young", 2, 8), t + absl::Seconds(1)).ok());
  EXPECT_TRUE(q.Schedule(small, t + absl::Seconds(2)).empty());
  ASSERT_EQ(q.waiting().size(), 2u);
  EXPECT_EQ(q.waiting()[0].spec.name, "big") << "the older gang keeps its place";
  EXPECT_LT(q.waiting()[0].hold_domain, small.cluster().num_domains());
  EXPECT_EQ(qt::HeldNodes(small, "big"), (std::vector<int>{3}));
  EXPECT_TRUE(small.CheckInvariants().ok());

  // A node frees: the older gang starts on it and the held one; the younger keeps waiting.
  ASSERT_TRUE(small.Release("s0").ok());
  EXPECT_EQ(q.Schedule(small, t + absl::Seconds(3)), (std::vector<std::string>{"big"}));
  EXPECT_EQ(q.waiting().size(), 1u);
  EXPECT_TRUE(small.CheckInvariants().ok());
}

TEST(GangQueueModelSwap, AHoldingGangKeepsHoldingWhereANewGangWouldNotYet) {
  // Holds start once 70 % of the gang's members are free in its domain (and not for a small
  // shortfall); a started hold keeps going.
  QueueOptions opts = qt::HoldAtOnce();
  opts.hold_min_gpus = 8;
  opts.hold_ready_fraction = 0.7;
  opts.hold_max_shortfall_share = 0;
  GangQueue q(opts);
  absl::Time t = absl::UnixEpoch();
  GangScheduler before(MakeCluster(1, 1, 1, 4, 8));
  qt::RunOn(before, "b0", 0, 0, 8);  // 3 of 4 nodes free: 75 %, the hold starts
  ASSERT_TRUE(q.Enqueue(qt::Gang("big", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(before, t).empty());
  ASSERT_TRUE(q.waiting()[0].holding);
  EXPECT_EQ(qt::HeldNodes(before, "big").size(), 3u);

  // The node set changes: eight nodes, six busy. 2 of 4 members free (50 %) would not start a
  // hold, but this gang was holding: it holds the two free nodes at once.
  GangScheduler after(MakeCluster(1, 1, 1, 8, 8));
  for (int n = 0; n < 6; ++n) qt::RunOn(after, "a" + std::to_string(n), n, 0, 8);
  EXPECT_TRUE(q.Schedule(after, t + absl::Seconds(1)).empty());
  EXPECT_TRUE(q.waiting()[0].holding);
  EXPECT_EQ(qt::HeldNodes(after, "big"), (std::vector<int>{6, 7}));
  EXPECT_FALSE(after.Reserve(qt::Gang("sneaky", 1, 8), t + absl::Seconds(1)).ok())
      << "the held nodes are invisible to everyone else";
  EXPECT_TRUE(after.CheckInvariants().ok());
}

}  // namespace
}  // namespace topogang
