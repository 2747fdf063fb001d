// GangQueue's reservations in time: what run-time estimates and limits change about holds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/queue_policy.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using queue_test::Gang;
using queue_test::HeldNodes;
using queue_test::HoldAtOnce;
using queue_test::RunOn;
using testing::MakeCluster;

// Reservations in time: a hold knows when its claim is estimated whole, and gangs whose enforced
// time limit ends by then run on the held GPUs meanwhile (Slurm's backfill rule). An estimate
// without a limit is a promise nobody keeps: no loan.
TEST(GangQueue, EstimatedGangsBackfillIntoAHoldTheyEndBefore) {
  for (bool lend : {true, false}) {
    GangScheduler s(MakeCluster(1, 1, 1, 4, 8));
    QueueOptions opts = HoldAtOnce();
    opts.claim_order = ClaimOrder::kSoonestFree;
    opts.backfill_into_holds = lend;
    GangQueue q(opts);
    const absl::Time t = absl::UnixEpoch();
    RunOn(s, "r0", 0, 0, 8, absl::Hours(1));
    RunOn(s, "r1", 1, 0, 8, absl::Hours(2));
    ASSERT_TRUE(q.Enqueue(Gang("big", 4, 8), t).ok());
    EXPECT_TRUE(q.Schedule(s, t).empty());
    ASSERT_EQ(q.waiting().size(), 1u);
    EXPECT_EQ(q.waiting()[0].ready_at, t + absl::Hours(2)) << "r1 ends last";
    EXPECT_EQ(HeldNodes(s, "big"), (std::vector<int>{2, 3}));
    GangSpec quick = Gang("quick", 1, 8), slow = Gang("slow", 1, 8), blind = Gang("blind", 1, 8);
    GangSpec says = Gang("says", 1, 8);
    quick.runtime_limit = absl::Minutes(90);   // ends before 2 h
    slow.runtime_limit = absl::Hours(3);       // would delay the hold
    says.runtime_estimate = absl::Minutes(5);  // claims to be short, but nothing stops it
    ASSERT_TRUE(q.Enqueue(slow, t + absl::Seconds(1)).ok());
    ASSERT_TRUE(q.Enqueue(blind, t + absl::Seconds(2)).ok());  // no limit: never lent GPUs
    ASSERT_TRUE(q.Enqueue(says, t + absl::Seconds(2)).ok());
    ASSERT_TRUE(q.Enqueue(quick, t + absl::Seconds(3)).ok());
    const std::vector<std::string> started = q.Schedule(s, t + absl::Seconds(5));
    if (lend) {
      EXPECT_EQ(started, std::vector<std::string>{"quick"});
      EXPECT_EQ(HeldNodes(s, "big").size(), 1u) << "the rest stays held";
    } else {
      EXPECT_TRUE(started.empty());
      EXPECT_EQ(HeldNodes(s, "big"), (std::vector<int>{2, 3}));
    }
    EXPECT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();
  }
}

TEST(GangQueue, SoonestFreeClaimTakesTheNodesEstimatedToFreeFirst) {
  GangScheduler s(MakeCluster(1, 1, 1, 3, 8));
  QueueOptions opts = HoldAtOnce();
  opts.claim_order = ClaimOrder::kSoonestFree;
  GangQueue q(opts);
  const absl::Time t = absl::UnixEpoch();
  RunOn(s, "late", 0, 0, 8, absl::Hours(3));
  RunOn(s, "soon", 1, 0, 8, absl::Hours(1));
  RunOn(s, "unknown", 2, 0, 8);  // no estimate: ends "never"
  ASSERT_TRUE(q.Enqueue(Gang("big", 2, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  ASSERT_EQ(q.waiting().size(), 1u);
  EXPECT_EQ(q.waiting()[0].claim, (std::vector<int>{1, 0}));
  EXPECT_EQ(q.waiting()[0].ready_at, t + absl::Hours(3));
  // A gang past its estimate counts as unknown.
  EXPECT_TRUE(q.Schedule(s, t + absl::Hours(4)).empty());
  EXPECT_EQ(q.waiting()[0].ready_at, absl::InfiniteFuture());
}

// Reservations in time pick the place too: a starved gang holds in the domain whose nodes should
// be free soonest by the estimates, as Slurm reserves the nodes that free up first, not in the
// one with the most room now, where one job without an estimate may block it for days.
TEST(GangQueue, HoldGoesWhereTheEstimatesSayRoomComesFirst) {
  for (bool soonest : {true, false}) {
    GangScheduler s(MakeCluster(1, 1, 2, 2, 8));  // leaf 0: nodes 0-1, leaf 1: nodes 2-3
    QueueOptions opts = HoldAtOnce();
    opts.hold_domain_soonest = soonest;
    GangQueue q(opts);
    const absl::Time t = absl::UnixEpoch();
    RunOn(s, "unknown", 0, 0, 8);  // no estimate: node 0 frees "never"
    RunOn(s, "soon", 2, 0, 8, absl::Hours(1));
    RunOn(s, "later", 3, 0, 8, absl::Hours(2));
    ASSERT_TRUE(q.Enqueue(Gang("big", 2, 8), t).ok());  // one leaf: node 1 is not enough
    EXPECT_TRUE(q.Schedule(s, t).empty());
    ASSERT_EQ(q.waiting().size(), 1u);
    const GangQueue::Entry& e = q.waiting()[0];
    if (soonest) {
      EXPECT_EQ(e.claim, (std::vector<int>{2, 3}));
      EXPECT_EQ(e.ready_at, t + absl::Hours(2));
      EXPECT_TRUE(HeldNodes(s, "big").empty()) << "nothing free there yet";
    } else {  // the leaf with the most free GPUs now
      EXPECT_EQ(e.claim, (std::vector<int>{1, 0}));
      EXPECT_EQ(e.ready_at, absl::InfiniteFuture());
      EXPECT_EQ(HeldNodes(s, "big"), (std::vector<int>{1}));
    }
    EXPECT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();
  }
}

}  // namespace
}  // namespace topogang
