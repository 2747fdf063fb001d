#include "scheduler/queue_policy.h"

#include <gtest/gtest.h>

#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using queue_test::Gang;
using queue_test::HeldNodes;
using queue_test::HoldAtOnce;
using queue_test::RunOn;
using testing::MakeCluster;

TEST(GangQueue, BackfillsAroundAGangThatDoesNotFit) {
  GangScheduler s(MakeCluster(1, 1, 2, 2, 8));
  GangQueue q;
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(s.Reserve(Gang("running", 1, 8), t).ok());
  ASSERT_TRUE(q.Enqueue(Gang("big", 4, 8), t).ok());
  ASSERT_TRUE(q.Enqueue(Gang("small", 1, 8), t + absl::Seconds(1)).ok());
  EXPECT_FALSE(q.Enqueue(Gang("small", 1, 8), t).ok());
  auto started = q.Schedule(s, t + absl::Seconds(2));
  EXPECT_EQ(started, std::vector<std::string>{"small"});
  EXPECT_TRUE(q.Contains("big"));
  EXPECT_NE(s.Find("small"), nullptr);
}

TEST(GangQueue, PriorityThenArrivalOrder) {
  GangScheduler s(MakeCluster(1, 1, 1, 1, 8));
  GangQueue q;
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(Gang("early", 1, 8), t).ok());
  ASSERT_TRUE(q.Enqueue(Gang("urgent", 1, 8, 10), t + absl::Seconds(5)).ok());
  EXPECT_EQ(q.Schedule(s, t + absl::Seconds(6)), std::vector<std::string>{"urgent"});
}

// A stream of one-node jobs keeps every leaf partly busy (never more than half of a leaf free).
// Without holds the 4-node gang waits forever; with holds it starts once the GPUs of one leaf
// drain into its hold.
enum class Holds { kOff, kAtOnce, kDefaults, kDefaultsNeverAnyway, kBackfillBlocks };
int StartTickOfBigGang(Holds holds) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  QueueOptions opts;
  if (holds == Holds::kAtOnce) opts = HoldAtOnce();
  opts.starvation_threshold = absl::Seconds(5);
  opts.hold_min_gpus = holds == Holds::kOff ? 1 << 30 : 32;
  opts.hold_anyway_after = holds == Holds::kDefaultsNeverAnyway || holds == Holds::kBackfillBlocks
                               ? absl::InfiniteDuration()
                               : absl::Seconds(30);
  opts.hold_when_backfill_blocks = holds == Holds::kBackfillBlocks;
  GangQueue q(opts);
  absl::Time t0 = absl::UnixEpoch();
  std::vector<std::pair<std::string, int>> running;  // (name, end tick)
  int next = 0;
  // Fill the cluster with small jobs first.
  for (int i = 0; i < 8; ++i) {
    std::string n = "s" + std::to_string(next++);
    EXPECT_TRUE(s.Reserve(Gang(n, 1, 8), t0).ok());
    running.emplace_back(n, 1 + i % 4);  // two nodes free up per tick
  }
  EXPECT_TRUE(q.Enqueue(Gang("big", 4, 8), t0).ok());
  for (int tick = 1; tick <= 100; ++tick) {
    absl::Time now = t0 + absl::Seconds(tick);
    for (auto it = running.begin(); it != running.end();) {
      if (it->second <= tick) {
        EXPECT_TRUE(s.Release(it->first).ok());
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    // Two new small jobs arrive every tick, each running 4 ticks: never 4 nodes free at once.
    for (int k = 0; k < 2; ++k)
      EXPECT_TRUE(q.Enqueue(Gang("s" + std::to_string(next++), 1, 8), now).ok());
    for (const std::string& n : q.Schedule(s, now)) {
      if (n == "big") return tick;
      running.emplace_back(n, tick + 4);
    }
    EXPECT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();
  }
  return -1;
}

TEST(GangQueue, HoldsStopStarvationOfLargeGangs) {
  EXPECT_EQ(StartTickOfBigGang(Holds::kOff), -1) << "the scenario must starve without holds";
  int tick = StartTickOfBigGang(Holds::kAtOnce);
  EXPECT_GT(tick, 0);
  EXPECT_LE(tick, 10) << "threshold 5s + at most one job duration";
}

TEST(GangQueue, DefaultHoldsStartLateButStillStopStarvation) {
  // The defaults hold only for nearly-ready gangs; here the leaf never looks nearly ready, so
  // only hold_anyway_after ends the starvation.
  EXPECT_EQ(StartTickOfBigGang(Holds::kDefaultsNeverAnyway), -1);
  int tick = StartTickOfBigGang(Holds::kDefaults);
  EXPECT_GT(tick, 30);
  EXPECT_LE(tick, 35) << "hold_anyway_after 30s + at most one job duration";
}

TEST(GangQueue, HoldWhenBackfillBlocksStartsTheHoldAtOnce) {
  // Every busy node runs a job that started after the big gang arrived: backfill blocks it.
  int tick = StartTickOfBigGang(Holds::kBackfillBlocks);
  EXPECT_GT(tick, 0);
  EXPECT_LE(tick, 10) << "threshold 5s + at most one job duration";
}

TEST(GangQueue, HoldIsInvisibleToOthersAndFreedOnRemove) {
  GangScheduler s(MakeCluster(1, 1, 2, 2, 8));
  QueueOptions opts = HoldAtOnce();
  opts.hold_min_gpus = 8;
  opts.whole_member_holds = false;  // hold partial nodes too
  GangQueue q(opts);
  absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(s.Reserve(Gang("a", 1, 4), t).ok());  // leaf0 node0 half used
  ASSERT_TRUE(s.Commit("a").ok());
  ASSERT_TRUE(q.Enqueue(Gang("big", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  const GangRecord* hold = s.Find(GangQueue::HoldName("big"));
  ASSERT_NE(hold, nullptr);
  EXPECT_EQ(hold->state, GangState::kHeld);
  EXPECT_EQ(s.cluster().FreeHealthy(0), 0) << "every free GPU is held for the starved gang";
  EXPECT_FALSE(s.Reserve(Gang("sneaky", 1, 1), t).ok());
  EXPECT_TRUE(s.ExpireReservations(t + absl::Hours(1)).empty()) << "holds never expire";
  EXPECT_TRUE(q.Remove(s, "big"));
  EXPECT_EQ(s.Find(GangQueue::HoldName("big")), nullptr);
  EXPECT_EQ(s.cluster().FreeHealthy(0), 28);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangQueue, NoHoldForAGangThatCanNeverFit) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  QueueOptions opts;
  opts.starvation_threshold = absl::ZeroDuration();
  opts.hold_min_gpus = 1;
  GangQueue q(opts);
  ASSERT_TRUE(q.Enqueue(Gang("impossible", 3, 8), absl::UnixEpoch()).ok());
  ASSERT_TRUE(q.Enqueue(Gang("ok", 1, 8), absl::UnixEpoch()).ok());
  EXPECT_EQ(q.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{"ok"});
  EXPECT_EQ(s.Find(GangQueue::HoldName("impossible")), nullptr);
}

TEST(GangQueue, WholeMemberHoldsLeavePartialNodesToSmallJobs) {
  GangScheduler s(MakeCluster(1, 1, 1, 4, 8));
  GangQueue q(HoldAtOnce());  // whole_member_holds is the default
  absl::Time t = absl::UnixEpoch();
  RunOn(s, "a", 0, 0, 4);  // node 0 half used
  RunOn(s, "b", 1, 0, 8);  // node 1 full
  ASSERT_TRUE(q.Enqueue(Gang("big", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(s.cluster().FreeHealthy(0), 4) << "node 0's half is not held";
  EXPECT_EQ(HeldNodes(s, "big"), (std::vector<int>{2, 3}));
  ASSERT_TRUE(q.Enqueue(Gang("small", 1, 4), t).ok());
  EXPECT_EQ(q.Schedule(s, t), std::vector<std::string>{"small"});
  EXPECT_EQ(s.Find("small")->placement.members[0].node, 0);
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangQueue, ClaimOrderPrefersNodesWithFewerGangs) {
  for (ClaimOrder order : {ClaimOrder::kMostFree, ClaimOrder::kFewestGangs}) {
    GangScheduler s(MakeCluster(1, 1, 1, 3, 8));
    QueueOptions opts = HoldAtOnce();
    opts.whole_member_holds = false;
    opts.claim_order = order;
    GangQueue q(opts);
    absl::Time t = absl::UnixEpoch();
    RunOn(s, "x", 1, 0, 2);  // node 1: two gangs, 4 GPUs free
    RunOn(s, "y", 1, 2, 2);
    RunOn(s, "z", 2, 0, 6);  // node 2: one gang, 2 GPUs free
    ASSERT_TRUE(q.Enqueue(Gang("big", 2, 8), t).ok());
    EXPECT_TRUE(q.Schedule(s, t).empty());
    std::vector<int> want = {0, order == ClaimOrder::kMostFree ? 1 : 2};
    EXPECT_EQ(HeldNodes(s, "big"), want);
  }
}

TEST(GangQueue, ReadyFractionDelaysTheHoldUntilTheDomainIsNearlyFree) {
  GangScheduler s(MakeCluster(1, 1, 1, 4, 8));
  QueueOptions opts = HoldAtOnce();
  opts.hold_ready_fraction = 0.5;
  opts.hold_max_shortfall_share = 0;
  GangQueue q(opts);
  absl::Time t = absl::UnixEpoch();
  for (int n = 0; n < 4; ++n) RunOn(s, "r" + std::to_string(n), n, 0, 8);
  ASSERT_TRUE(q.Enqueue(Gang("big", 4, 8), t).ok());
  ASSERT_TRUE(s.Release("r0").ok());  // 1 of 4 members free: below half
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_TRUE(HeldNodes(s, "big").empty());
  ASSERT_TRUE(s.Release("r1").ok());  // 2 of 4: hold
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(HeldNodes(s, "big").size(), 2u);
  EXPECT_EQ(s.cluster().FreeHealthy(0), 0);
  // A started hold keeps going even if the domain falls below the share.
  ASSERT_TRUE(q.Enqueue(Gang("late", 1, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t + absl::Seconds(1)).empty()) << "late cannot take held GPUs";
  EXPECT_EQ(HeldNodes(s, "big").size(), 2u);
}

TEST(GangQueue, SmallShortfallStartsTheHoldBeforeTheReadyFraction) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));  // 64 GPUs
  QueueOptions opts = HoldAtOnce();
  opts.hold_ready_fraction = 0.9;
  opts.hold_max_shortfall_share = 0.25;  // 16 GPUs
  GangQueue q(opts);
  absl::Time t = absl::UnixEpoch();
  for (int n = 0; n < 8; ++n) RunOn(s, "r" + std::to_string(n), n, 0, 8);
  ASSERT_TRUE(q.Enqueue(Gang("big", 4, 8), t).ok());
  ASSERT_TRUE(s.Release("r0").ok());  // leaf 0: 1 of 4 free, short 24 GPUs
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_TRUE(HeldNodes(s, "big").empty());
  ASSERT_TRUE(s.Release("r1").ok());  // short 16 GPUs: hold, though only half is free
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(HeldNodes(s, "big"), (std::vector<int>{0, 1}));
}

TEST(GangQueue, TimedOutHoldBacksOffThenHoldsAgain) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  QueueOptions opts = HoldAtOnce();
  opts.hold_timeout = absl::Seconds(10);
  GangQueue q(opts);
  absl::Time t = absl::UnixEpoch();
  RunOn(s, "r", 1, 0, 8);
  ASSERT_TRUE(q.Enqueue(Gang("big", 2, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(HeldNodes(s, "big"), std::vector<int>{0});
  EXPECT_TRUE(q.Schedule(s, t + absl::Seconds(9)).empty());
  EXPECT_EQ(HeldNodes(s, "big"), std::vector<int>{0});
  EXPECT_TRUE(q.Schedule(s, t + absl::Seconds(10)).empty());
  EXPECT_TRUE(HeldNodes(s, "big").empty()) << "gave up after the timeout";
  ASSERT_TRUE(q.Enqueue(Gang("small", 1, 8), t + absl::Seconds(11)).ok());
  EXPECT_EQ(q.Schedule(s, t + absl::Seconds(11)), std::vector<std::string>{"small"});
  ASSERT_TRUE(s.Release("small").ok());
  EXPECT_TRUE(q.Schedule(s, t + absl::Seconds(19)).empty());
  EXPECT_TRUE(HeldNodes(s, "big").empty()) << "still backing off";
  EXPECT_TRUE(q.Schedule(s, t + absl::Seconds(20)).empty());
  EXPECT_EQ(HeldNodes(s, "big"), std::vector<int>{0}) << "holds again after the backoff";
  EXPECT_TRUE(s.CheckInvariants().ok());
}

TEST(GangQueue, OlderJobsDoNotCountAsBackfill) {
  GangScheduler s(MakeCluster(1, 1, 1, 4, 8));
  QueueOptions opts = HoldAtOnce();
  opts.hold_ready_fraction = 0;
  opts.hold_max_shortfall_share = 0;
  opts.hold_when_backfill_blocks = true;
  GangQueue q(opts);
  absl::Time t = absl::UnixEpoch() + absl::Hours(1);
  for (int n = 0; n < 3; ++n) RunOn(s, "old" + std::to_string(n), n, 0, 8);  // at the epoch
  ASSERT_TRUE(q.Enqueue(Gang("big", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_TRUE(HeldNodes(s, "big").empty()) << "the old jobs were there first: no hold";
  ASSERT_TRUE(s.Release("old0").ok());
  ASSERT_TRUE(q.Enqueue(Gang("young", 1, 8), t + absl::Seconds(1)).ok());
  ASSERT_EQ(q.Schedule(s, t + absl::Seconds(1)), std::vector<std::string>{"young"});
  EXPECT_TRUE(HeldNodes(s, "big").empty()) << "free + young = 2 of 4 members";
  ASSERT_TRUE(s.Release("old1").ok());
  EXPECT_TRUE(q.Schedule(s, t + absl::Seconds(2)).empty());
  EXPECT_TRUE(HeldNodes(s, "big").empty()) << "free + young = 3 of 4 members";
}

TEST(GangQueue, LocalityPatienceWaitsForABetterPlacementThenTakesWhatThereIs) {
  // One leaf of two 8-GPU nodes, each half busy: a 2 x 4 gang fits only across the two nodes
  // (400 Gb/s against 7,200 on one node).
  for (bool frees : {false, true}) {
    GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
    QueueOptions opts;
    opts.locality_patience = absl::Minutes(30);
    GangQueue q(opts);
    const absl::Time t = absl::UnixEpoch();
    RunOn(s, "a", 0, 0, 4);
    RunOn(s, "b", 1, 0, 4);
    ASSERT_TRUE(q.Enqueue(Gang("pair", 2, 4), t).ok());
    EXPECT_TRUE(q.Schedule(s, t).empty()) << "could start split: waits";
    EXPECT_EQ(s.Find("pair"), nullptr);
    EXPECT_EQ(q.NextDeadline(t), t + absl::Minutes(30));
    if (frees) {
      ASSERT_TRUE(s.Release("a").ok());  // node 0 is free within the patience
      ASSERT_EQ(q.Schedule(s, t + absl::Minutes(10)), std::vector<std::string>{"pair"});
      for (const MemberPlacement& m : s.Find("pair")->placement.members) EXPECT_EQ(m.node, 0);
      continue;
    }
    EXPECT_TRUE(q.Schedule(s, t + absl::Minutes(29)).empty());
    ASSERT_EQ(q.Schedule(s, t + absl::Minutes(30)), std::vector<std::string>{"pair"});
    EXPECT_EQ(s.Find("pair")->placement.Nodes(), (std::vector<int>{0, 1}));
  }
}

TEST(GangQueue, GangsLargeEnoughForHoldsTakeWhatFitsWithoutPatience) {
  // The case above (a 2 x 4 gang that fits only across two nodes) with holds from 8 GPUs: the
  // gang is large enough for a hold, so it starts split at once; from 9 GPUs it waits again.
  for (int hold_min : {8, 9}) {
    GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
    QueueOptions opts;
    opts.locality_patience = absl::Minutes(30);
    opts.hold_min_gpus = hold_min;
    GangQueue q(opts);
    RunOn(s, "a", 0, 0, 4);
    RunOn(s, "b", 1, 0, 4);
    ASSERT_TRUE(q.Enqueue(Gang("pair", 2, 4), absl::UnixEpoch()).ok());
    const std::vector<std::string> started = q.Schedule(s, absl::UnixEpoch());
    EXPECT_EQ(started.size(), hold_min == 8 ? 1u : 0u) << "hold_min_gpus " << hold_min;
  }
}

TEST(GangQueue, NoPatienceStartsAtOnceAndSingleMembersNeverWait) {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  QueueOptions opts;
  opts.locality_patience = absl::ZeroDuration();
  GangQueue q(opts);
  RunOn(s, "a", 0, 0, 4);
  RunOn(s, "b", 1, 0, 4);
  ASSERT_TRUE(q.Enqueue(Gang("pair", 2, 4), absl::UnixEpoch()).ok());
  EXPECT_EQ(q.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{"pair"});
  GangQueue patient;  // the defaults: 30 minutes of patience, but a one-member gang has no split
  ASSERT_TRUE(patient.Enqueue(Gang("solo", 1, 2), absl::UnixEpoch()).ok());
  EXPECT_EQ(patient.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{});  // no room left
  ASSERT_TRUE(s.Release("pair").ok());
  EXPECT_EQ(patient.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{"solo"});
}

TEST(GangQueue, DefaultsHoldOnlyForGangsOf256GpusOrMore) {
  GangScheduler s(MakeCluster(1, 1, 2, 16, 8));  // 256 GPUs
  QueueOptions opts;
  opts.starvation_threshold = absl::ZeroDuration();
  opts.hold_ready_fraction = 0;
  opts.hold_max_shortfall_share = 1;
  GangQueue q(opts);
  RunOn(s, "r0", 0, 0, 8);
  RunOn(s, "r1", 16, 0, 8);                                            // 30 nodes free
  ASSERT_TRUE(q.Enqueue(Gang("mid", 31, 8), absl::UnixEpoch()).ok());  // 248 GPUs
  EXPECT_TRUE(q.Schedule(s, absl::UnixEpoch()).empty());
  EXPECT_TRUE(HeldNodes(s, "mid").empty()) << "below hold_min_gpus: backfill only";
  ASSERT_TRUE(q.Enqueue(Gang("huge", 32, 8), absl::UnixEpoch()).ok());  // 256 GPUs
  EXPECT_TRUE(q.Schedule(s, absl::UnixEpoch()).empty());
  EXPECT_TRUE(HeldNodes(s, "mid").empty());
  EXPECT_EQ(HeldNodes(s, "huge").size(), 30u);
}

// Schedule skips the planner for a gang whose shape already found no room earlier in the same
// pass with no more members. These cases would start a gang that fits if that skipping went
// wrong: the shape must tell mixed-SKU gangs apart, and a hold given up in the pass frees GPUs.
TEST(GangQueue, ShapeSkippingNeverSkipsAGangThatFits) {
  // Two leaves of one 8-GPU node, leaf0 H100 and leaf1 A100: 2 x 8 fits only mixing models.
  {
    GangScheduler s(MakeCluster(1, 1, 2, 1, 8, "[H100, A100]"));
    QueueOptions opts;
    opts.locality_patience = absl::ZeroDuration();
    GangQueue q(opts);
    absl::Time t = absl::UnixEpoch();
    ASSERT_TRUE(q.Enqueue(Gang("one-model", 2, 8, 1), t).ok());
    GangSpec mixed = Gang("mixed", 2, 8);
    mixed.allow_mixed_sku = true;
    ASSERT_TRUE(q.Enqueue(mixed, t).ok());
    EXPECT_EQ(q.Schedule(s, t), std::vector<std::string>{"mixed"});
    EXPECT_TRUE(q.Contains("one-model"));
  }
  // "first" (1 x 8) finds no room: nodes 0 and 2 have 4 GPUs free each, node 1 is held for
  // "big". Then big's hold times out in the same pass and node 1 is free again, so "second"
  // (1 x 8, the same shape) fits.
  {
    GangScheduler s(MakeCluster(1, 1, 1, 3, 8));
    QueueOptions opts = HoldAtOnce();
    opts.hold_min_gpus = 16;  // only big holds
    opts.hold_timeout = absl::Seconds(10);
    GangQueue q(opts);
    absl::Time t = absl::UnixEpoch();
    RunOn(s, "r0", 0, 0, 4);
    RunOn(s, "r2", 2, 0, 4);
    ASSERT_TRUE(q.Enqueue(Gang("big", 2, 8, 1), t).ok());
    EXPECT_TRUE(q.Schedule(s, t).empty());
    ASSERT_EQ(HeldNodes(s, "big"), std::vector<int>{1});
    ASSERT_TRUE(q.Enqueue(Gang("first", 1, 8, 2), t + absl::Seconds(1)).ok());
    ASSERT_TRUE(q.Enqueue(Gang("second", 1, 8, 0), t + absl::Seconds(1)).ok());
    EXPECT_EQ(q.Schedule(s, t + absl::Seconds(10)), std::vector<std::string>{"second"});
    EXPECT_TRUE(HeldNodes(s, "big").empty());
    EXPECT_TRUE(s.CheckInvariants().ok());
  }
  // A gang that cannot be planned at all (unknown tier) never counts as "no room": it gets no
  // hold even when it needs more GPUs than are free (4).
  {
    GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
    GangQueue q(HoldAtOnce());
    absl::Time t = absl::UnixEpoch();
    RunOn(s, "r0", 0, 0, 8);
    RunOn(s, "r1", 1, 0, 4);
    GangSpec bad = Gang("bad", 1, 8);
    bad.required_tier = "no-such-tier";
    ASSERT_TRUE(q.Enqueue(bad, t).ok());
    EXPECT_TRUE(q.Schedule(s, t).empty());
    ASSERT_EQ(q.waiting().size(), 1u);
    EXPECT_FALSE(q.waiting()[0].holding);
    EXPECT_TRUE(q.waiting()[0].claim.empty());
  }
}

}  // namespace
}  // namespace topogang
