#include "scheduler/queue_policy.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace topogang {
namespace {

using testing::MakeCluster;

GangSpec Gang(std::string name, int members, int gpus, int priority = 0) {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  g.priority = priority;
  return g;
}

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

// A stream of one-node jobs keeps every leaf partly busy. Without holds the 4-node gang waits
// forever; with holds it starts once the GPUs of one leaf drain into its hold.
int StartTickOfBigGang(bool holds) {
  GangScheduler s(MakeCluster(1, 1, 2, 4, 8));
  QueueOptions opts;
  opts.starvation_threshold = absl::Seconds(5);
  opts.hold_min_gpus = holds ? 32 : 1 << 30;
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
  EXPECT_EQ(StartTickOfBigGang(false), -1) << "the scenario must starve without holds";
  int tick = StartTickOfBigGang(true);
  EXPECT_GT(tick, 0);
  EXPECT_LE(tick, 10) << "threshold 5s + at most one job duration";
}

TEST(GangQueue, HoldIsInvisibleToOthersAndFreedOnRemove) {
  GangScheduler s(MakeCluster(1, 1, 2, 2, 8));
  QueueOptions opts;
  opts.starvation_threshold = absl::ZeroDuration();
  opts.hold_min_gpus = 8;
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

}  // namespace
}  // namespace topogang
