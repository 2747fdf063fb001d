// Large gangs in arrival order (QueueOptions::large_gangs_in_order): while the oldest starved
// gang of hold_min_gpus or more cannot start, younger gangs that large (or, with
// large_in_order_min_share, of that share of it) wait too; smaller ones still backfill (unless
// large_in_order_overload_backlog stops them while the large gangs do not overload the cluster),
// and a gang that could never start stops nobody.
//
// The cluster of every test: one spine of three leaves of two 8-GPU nodes (48 GPUs). Jobs run
// on nodes 0-2, so 24 GPUs are free: `old` (4 x 8 GPUs) does not fit, `young` (2 x 8) does.
// Holds never start (the readiness rule asks for more than the whole gang), so what keeps
// `young` off the free nodes is the order alone, not GPUs held for `old`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/queue_admission.h"
#include "scheduler/queue_policy.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

namespace qt = queue_test;

QueueOptions InOrder(bool in_order) {
  QueueOptions o;
  o.starvation_threshold = absl::Minutes(10);
  o.hold_min_gpus = 16;
  o.hold_ready_fraction = 1.01;  // never nearly ready: no hold
  o.hold_max_shortfall_share = 0;
  o.large_gangs_in_order = in_order;
  return o;
}

class LargeGangsInOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n : {0, 1, 2}) qt::RunOn(s_, "r" + std::to_string(n), n, 0, 8);
  }
  // `old` waits from t_; the next pass is `wait` later, with `young` enqueued just before it.
  std::vector<std::string> OldThenYoung(GangQueue& q, absl::Duration wait,
                                        const GangSpec& young = qt::Gang("young", 2, 8)) {
    EXPECT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
    EXPECT_TRUE(q.Schedule(s_, t_).empty());
    EXPECT_TRUE(q.Enqueue(young, t_ + wait - absl::Seconds(1)).ok());
    return q.Schedule(s_, t_ + wait);
  }

  GangScheduler s_{testing::MakeCluster(1, 1, 3, 2, 8)};
  const absl::Time t_ = absl::UnixEpoch();
};

TEST_F(LargeGangsInOrder, AYoungerLargeGangWaitsBehindAStarvedOneThatThenStartsFirst) {
  GangQueue q(InOrder(true));
  EXPECT_TRUE(OldThenYoung(q, absl::Minutes(11)).empty());
  const GangQueue::Entry* young = q.Find("young");
  ASSERT_NE(young, nullptr);
  EXPECT_NE(young->declined.find("waiting behind gang 'old'"), std::string::npos)
      << young->declined;
  EXPECT_TRUE(s_.CheckInvariants().ok());
  // One job ends: 32 GPUs free, room for `old` only, and it is the one that starts.
  ASSERT_TRUE(s_.Release("r0").ok());
  EXPECT_EQ(q.Schedule(s_, t_ + absl::Minutes(12)), (std::vector<std::string>{"old"}));
  EXPECT_EQ(q.Find("young")->declined, "") << "nobody to wait behind once old started";
}

TEST_F(LargeGangsInOrder, WithoutItTheYoungerGangTakesTheRoomAndTheStarvedOneKeepsWaiting) {
  // The contrast that makes the test above mean something.
  GangQueue q(InOrder(false));
  EXPECT_EQ(OldThenYoung(q, absl::Minutes(11)), (std::vector<std::string>{"young"}));
  ASSERT_TRUE(s_.Release("r0").ok());
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Minutes(12)).empty()) << "16 GPUs free, old needs 32";
}

TEST_F(LargeGangsInOrder, SmallerGangsStillBackfill) {
  GangQueue q(InOrder(true));
  EXPECT_EQ(OldThenYoung(q, absl::Minutes(11), qt::Gang("small", 1, 8)),
            (std::vector<std::string>{"small"}));
}

TEST_F(LargeGangsInOrder, WithAMinShareOnlyGangsOfThatShareOfTheStarvedOneWait) {
  // QueueOptions::large_in_order_min_share: `young` (16 GPUs) is half of `old` (32). At a share
  // of 0.75 only gangs of 24+ GPUs wait behind old, so young backfills; at 0.5 it waits.
  QueueOptions o = InOrder(true);
  o.large_in_order_min_share = 0.75;
  GangQueue q(o);
  EXPECT_EQ(OldThenYoung(q, absl::Minutes(11)), (std::vector<std::string>{"young"}));
  EXPECT_EQ(q.Find("old")->waits_behind, "");
}

TEST_F(LargeGangsInOrder, AGangOfTheMinShareWaitsAndIsToldFromWhichSize) {
  QueueOptions o = InOrder(true);
  o.large_in_order_min_share = 0.5;
  GangQueue q(o);
  EXPECT_TRUE(OldThenYoung(q, absl::Minutes(11)).empty());
  const GangQueue::Entry* young = q.Find("young");
  ASSERT_NE(young, nullptr);
  EXPECT_EQ(young->waits_behind, "old");
  EXPECT_NE(young->declined.find("gangs of 16+ GPUs start in queue order behind it"),
            std::string::npos)
      << young->declined;
}

TEST_F(LargeGangsInOrder, ASmallMinShareNeverLowersTheBoundBelowHoldMinGpus) {
  // A share of 0.1 is 3.2 GPUs of old's 32: the bound stays hold_min_gpus (16), and says so.
  QueueOptions o = InOrder(true);
  o.large_in_order_min_share = 0.1;
  GangQueue q(o);
  EXPECT_TRUE(OldThenYoung(q, absl::Minutes(11)).empty());
  EXPECT_NE(q.Find("young")->declined.find("gangs of 16+ GPUs start"), std::string::npos)
      << q.Find("young")->declined;
}

TEST_F(LargeGangsInOrder, AGangNotYetStarvedStopsNobody) {
  GangQueue q(InOrder(true));
  EXPECT_EQ(OldThenYoung(q, absl::Minutes(5)), (std::vector<std::string>{"young"}));
}

TEST_F(LargeGangsInOrder, AnOlderGangOfLowerPriorityWaitsBehindAHigherPriorityOne) {
  // Queue order is priority first: `low` arrived before `old` but is behind it in line.
  GangQueue q(InOrder(true));
  ASSERT_TRUE(q.Enqueue(qt::Gang("low", 2, 8, /*priority=*/0), t_ - absl::Minutes(1)).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8, /*priority=*/10), t_).ok());
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Minutes(11)).empty());
  EXPECT_EQ(q.Find("low")->waits_behind, "old");
  EXPECT_EQ(q.Find("old")->waits_behind, "");
}

TEST_F(LargeGangsInOrder, SmallestFirstDoesNotStopAnOlderGangBehindAYoungerOne) {
  // Smallest first tries `mid` (24 GPUs, starved, does not fit) before the older `old` (32):
  // `old` comes later in the pass but is ahead of `mid` in arrival, so it is not stopped.
  qt::RunOn(s_, "r3", 3, 0, 8);  // 16 GPUs free
  QueueOptions o = InOrder(true);
  o.order = QueueOrder::kSmallestFirst;
  GangQueue q(o);
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("mid", 3, 8), t_ + absl::Seconds(1)).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("later", 4, 8), t_ + absl::Seconds(2)).ok());
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Minutes(11)).empty());
  EXPECT_EQ(q.Find("old")->waits_behind, "") << q.Find("old")->declined;
  EXPECT_EQ(q.Find("later")->waits_behind, "mid") << "younger and behind it: stopped";
}

TEST_F(LargeGangsInOrder, AGangThatCouldNeverStartStopsNobody) {
  // Nodes 3-5 cordoned, 0-2 free: 24 healthy GPUs, and old (32) could not start even on an empty
  // cluster. Stopping young behind it would stop every large gang for good.
  for (int n : {0, 1, 2}) ASSERT_TRUE(s_.Release("r" + std::to_string(n)).ok());
  for (int n : {3, 4, 5}) s_.SetNodeCordoned(n, true, t_);
  GangQueue q(InOrder(true));
  EXPECT_EQ(OldThenYoung(q, absl::Minutes(11)), (std::vector<std::string>{"young"}));
}

TEST_F(LargeGangsInOrder, AGangThatMayNeverUseEnoughNodesStopsNobody) {
  // Nodes 0-2 are those old may never use (in the daemon: not offered although they have room),
  // so it could not start on a drained cluster either.
  GangQueue q(InOrder(true));
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("young", 2, 8), t_ + absl::Minutes(10)).ok());
  auto never = [](const GangSpec& g) {
    return g.name == "old" ? std::vector<int>{0, 1, 2} : std::vector<int>{};
  };
  EXPECT_EQ(q.Schedule(s_, t_ + absl::Minutes(11), {}, never), (std::vector<std::string>{"young"}));
}

TEST(LargeGangsInOrderOnAnEmptyCluster, AGangThatFitsNoSingleSkuStopsNobody) {
  // Leaf 0 is H100 (nodes 0-1), leaf 1 A100 (nodes 2-3): `old` (3 x 8) names no SKU and may not
  // mix them, so it fits neither, though the cluster has 32 GPUs. Jobs on nodes 0 and 2 leave
  // one node of each free, where `young` (1 x 8, large here) fits.
  GangScheduler s(testing::MakeCluster(1, 1, 2, 2, 8, "[H100, A100]"));
  for (int n : {0, 2}) qt::RunOn(s, "r" + std::to_string(n), n, 0, 8);
  QueueOptions o = InOrder(true);
  o.hold_min_gpus = 8;
  GangQueue q(o);
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 3, 8), absl::UnixEpoch()).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("young", 1, 8), absl::UnixEpoch() + absl::Minutes(10)).ok());
  EXPECT_EQ(q.Schedule(s, absl::UnixEpoch() + absl::Minutes(11)),
            (std::vector<std::string>{"young"}));
}

TEST(LargeGangsInOrderOnAnEmptyCluster, AGangWhoseSlicesFitNoDomainStopsNobody) {
  // Slices of 4 members within one leaf, on leaves of two 8-GPU nodes: never placeable.
  GangScheduler s(testing::MakeCluster(1, 1, 3, 2, 8));
  GangSpec old = qt::Gang("old", 4, 8);
  old.slice.members = 4;
  old.slice.tier = "leaf";
  GangQueue q(InOrder(true));
  ASSERT_TRUE(q.Enqueue(old, absl::UnixEpoch()).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("young", 2, 8), absl::UnixEpoch() + absl::Minutes(10)).ok());
  EXPECT_EQ(q.Schedule(s, absl::UnixEpoch() + absl::Minutes(11)),
            (std::vector<std::string>{"young"}));
}

TEST_F(LargeGangsInOrder, AGangThatFitsOnceNodesDrainStopsTheOthers) {
  // The contrast: node 5 is busy instead of cordoned, so old fits once its job ends.
  for (int n : {0, 1, 2}) ASSERT_TRUE(s_.Release("r" + std::to_string(n)).ok());
  for (int n : {3, 4}) s_.SetNodeCordoned(n, true, t_);
  qt::RunOn(s_, "r5", 5, 0, 8);
  GangQueue q(InOrder(true));
  EXPECT_TRUE(OldThenYoung(q, absl::Minutes(11)).empty());
}

TEST_F(LargeGangsInOrder, TheDaemonTellsTheStoppedGangsPodsWhomTheyWaitBehind) {
  // The daemon's admission answers kube-scheduler's filter with this message.
  QueueAdmission admit(InOrder(true));
  // old's pods ask again while they wait (a gang silent for 6 minutes leaves the queue).
  for (absl::Duration at : {absl::ZeroDuration(), absl::Minutes(5), absl::Minutes(10)}) {
    EXPECT_FALSE(admit.Admit(s_, qt::Gang("old", 4, 8), t_ + at, {}).ok());
  }
  absl::StatusOr<const GangRecord*> young =
      admit.Admit(s_, qt::Gang("young", 2, 8), t_ + absl::Minutes(11), {});
  ASSERT_EQ(young.status().code(), absl::StatusCode::kResourceExhausted) << young.status();
  EXPECT_NE(young.status().message().find("waiting behind gang 'old'"), std::string::npos)
      << young.status();
}

// QueueOptions::large_in_order_overload_backlog. With a share of 0.25, `old` (32 GPUs) stops
// gangs of 8+ GPUs while the large gangs do not overload the cluster (48 GPUs), even below
// hold_min_gpus (16); once their backlog passed the share of the cluster, only gangs of 16+.
QueueOptions WithOverloadBacklog(double backlog) {
  QueueOptions o = InOrder(true);
  o.large_in_order_min_share = 0.25;
  o.large_in_order_overload_backlog = backlog;
  o.large_in_order_overload_memory = absl::Hours(1);
  return o;
}

TEST_F(LargeGangsInOrder, WhileLargeGangsDoNotOverloadTheClusterASmallerGangOfTheShareWaitsToo) {
  // old alone asks for 32 of 48 GPUs: not above 1.0 of the cluster.
  GangQueue q(WithOverloadBacklog(1.0));
  EXPECT_TRUE(OldThenYoung(q, absl::Minutes(11), qt::Gang("small", 1, 8)).empty());
  EXPECT_FALSE(q.LargeGangsOverload(t_ + absl::Minutes(11)));
  const GangQueue::Entry* small = q.Find("small");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->waits_behind, "old");
  EXPECT_NE(small->declined.find("gangs of 8+ GPUs start in queue order behind it"),
            std::string::npos)
      << small->declined;
  // The contrast: without the option the share rule keeps its floor of hold_min_gpus.
  GangScheduler other{testing::MakeCluster(1, 1, 3, 2, 8)};
  for (int n : {0, 1, 2}) qt::RunOn(other, "r" + std::to_string(n), n, 0, 8);
  GangQueue plain(WithOverloadBacklog(0));
  ASSERT_TRUE(plain.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  ASSERT_TRUE(plain.Enqueue(qt::Gang("small", 1, 8), t_ + absl::Minutes(10)).ok());
  EXPECT_EQ(plain.Schedule(other, t_ + absl::Minutes(11)), (std::vector<std::string>{"small"}));
  EXPECT_TRUE(plain.LargeGangsOverload(t_ + absl::Minutes(11))) << "off: always the share rule";
}

TEST_F(LargeGangsInOrder, OnceTheLargeGangsBacklogPassedItsShareOnlyTheShareRuleStops) {
  // 0.5 of 48 GPUs is 24: old's 32, still waiting after the first pass, are above it, so in
  // the next small backfills and young (16) still waits.
  GangQueue q(WithOverloadBacklog(0.5));
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  EXPECT_FALSE(q.LargeGangsOverload(t_)) << "no pass has seen a backlog yet";
  EXPECT_TRUE(q.Schedule(s_, t_).empty());
  EXPECT_TRUE(q.LargeGangsOverload(t_));
  ASSERT_TRUE(q.Enqueue(qt::Gang("young", 2, 8), t_ + absl::Minutes(1)).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("small", 1, 8), t_ + absl::Minutes(2)).ok());
  EXPECT_EQ(q.Schedule(s_, t_ + absl::Minutes(11)), (std::vector<std::string>{"small"}));
  EXPECT_TRUE(q.LargeGangsOverload(t_ + absl::Minutes(11)));
  EXPECT_EQ(q.Find("young")->waits_behind, "old");
}

TEST_F(LargeGangsInOrder, AnOverloadIsRememberedForItsMemoryThenTheStricterOrderReturns) {
  // 0.9 of 48 GPUs is 43.2: old and young together (48) pass it, old alone (32) does not.
  GangQueue q(WithOverloadBacklog(0.9));
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("young", 2, 8), t_ + absl::Minutes(1)).ok());
  const absl::Time seen = t_ + absl::Minutes(11);
  EXPECT_TRUE(q.Schedule(s_, seen).empty());
  EXPECT_TRUE(q.LargeGangsOverload(seen));
  ASSERT_TRUE(q.Remove(s_, "young"));  // the backlog drops to old's 32
  // Within the hour's memory the share rule still applies: a gang of 8 backfills.
  ASSERT_TRUE(q.Enqueue(qt::Gang("small1", 1, 8), seen + absl::Minutes(30)).ok());
  EXPECT_EQ(q.Schedule(s_, seen + absl::Minutes(59)), (std::vector<std::string>{"small1"}));
  EXPECT_TRUE(q.LargeGangsOverload(seen + absl::Minutes(59)));
  // An hour after the last pass that saw the overload, gangs of 8+ wait behind old again,
  // though 16 GPUs are free.
  ASSERT_TRUE(q.Enqueue(qt::Gang("small2", 1, 8), seen + absl::Minutes(59)).ok());
  EXPECT_TRUE(q.Schedule(s_, seen + absl::Minutes(60)).empty());
  EXPECT_FALSE(q.LargeGangsOverload(seen + absl::Minutes(60)));
  ASSERT_NE(q.Find("small2"), nullptr);
  EXPECT_EQ(q.Find("small2")->waits_behind, "old");
  EXPECT_TRUE(s_.CheckInvariants().ok());
}

TEST_F(LargeGangsInOrder, AGangThatCouldNeverStartIsNoPartOfTheBacklog) {
  // old (32 GPUs, above 0.5 of 48) may never use nodes 0-2: left in the backlog it would keep
  // the cluster "overloaded" for as long as it waits. Once starved and checked it is left out.
  GangQueue q(WithOverloadBacklog(0.5));
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  auto never = [](const GangSpec& g) {
    return g.name == "old" ? std::vector<int>{0, 1, 2} : std::vector<int>{};
  };
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Minutes(5), {}, never).empty());
  EXPECT_TRUE(q.LargeGangsOverload(t_ + absl::Minutes(5))) << "not starved yet: not checked";
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Minutes(11), {}, never).empty());
  EXPECT_TRUE(q.Find("old")->never_starts);
  EXPECT_FALSE(q.LargeGangsOverload(t_ + absl::Minutes(11) + absl::Hours(1)));
}

// A new leader resumes the earlier one's memory (GangQueue::SeedLargeOverload, kept by
// kube/queue_journal.h). Unseeded, the same queue stops `small` behind `old`
// (WhileLargeGangsDoNotOverloadTheClusterASmallerGangOfTheShareWaitsToo).
TEST_F(LargeGangsInOrder, ALeaderSeededWithTheLastOverloadKeepsTheShareRuleForItsMemory) {
  GangQueue q(WithOverloadBacklog(1.0));  // old alone (32 of 48 GPUs) is no overload
  q.SeedLargeOverload(t_ - absl::Minutes(19), t_);
  EXPECT_EQ(OldThenYoung(q, absl::Minutes(11), qt::Gang("small", 1, 8)),
            (std::vector<std::string>{"small"}));
  EXPECT_EQ(q.large_overload_seen(), t_ - absl::Minutes(19)) << "no pass of its own saw one";
  EXPECT_TRUE(q.LargeGangsOverload(t_ + absl::Minutes(40)));
  EXPECT_FALSE(q.LargeGangsOverload(t_ + absl::Minutes(41))) << "the hour ran out";
  // A time from the future (skewed clocks, an edited record) counts as now: one memory at most.
  GangQueue skewed(WithOverloadBacklog(1.0));
  skewed.SeedLargeOverload(t_ + absl::Hours(100), t_);
  EXPECT_TRUE(skewed.LargeGangsOverload(t_ + absl::Minutes(59)));
  EXPECT_FALSE(skewed.LargeGangsOverload(t_ + absl::Minutes(60)));
  // An older record does not replace a later overload this leader knows of.
  skewed.SeedLargeOverload(t_ - absl::Hours(5), t_);
  EXPECT_EQ(skewed.large_overload_seen(), t_);
  // With the switch off a record changes nothing, and none is handed on.
  GangQueue off(WithOverloadBacklog(0));
  off.SeedLargeOverload(t_, t_);
  EXPECT_EQ(off.large_overload_seen(), absl::InfinitePast());
}

// What a leader hands on: rounded down to a hundredth of the memory (at least a minute), so a
// lasting overload rewrites the journal rarely; nothing when the memory ends with the last pass.
TEST_F(LargeGangsInOrder, TheHandedOnOverloadIsRoundedToAHundredthOfTheMemory) {
  QueueOptions o = WithOverloadBacklog(0.5);  // 24 of 48 GPUs: old's 32 are an overload
  o.large_in_order_overload_memory = absl::Hours(48);
  GangQueue q(o);
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  const absl::Time pass = t_ + absl::Hours(3) + absl::Minutes(40);
  EXPECT_TRUE(q.Schedule(s_, pass).empty());
  // 3 h 40 min after the epoch is 7.6 steps of 28.8 minutes: it is handed on as the 7th.
  EXPECT_EQ(q.large_overload_seen(), t_ + 7 * absl::Minutes(28.8));
  o.large_in_order_overload_memory = absl::Minutes(30);
  GangQueue short_memory(o);
  short_memory.SeedLargeOverload(t_ + absl::Seconds(90), pass);
  EXPECT_EQ(short_memory.large_overload_seen(), t_ + absl::Minutes(1)) << "a minute at least";
  o.large_in_order_overload_memory = absl::ZeroDuration();
  GangQueue no_memory(o);
  ASSERT_TRUE(no_memory.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  EXPECT_TRUE(no_memory.Schedule(s_, pass).empty());
  EXPECT_TRUE(no_memory.LargeGangsOverload(pass));
  EXPECT_EQ(no_memory.large_overload_seen(), absl::InfinitePast())
      << "the next leader's first pass knows as much";
}

TEST_F(LargeGangsInOrder, WithNoMemoryTheOverloadFollowsTheLastPass) {
  QueueOptions o = WithOverloadBacklog(0.9);  // 43.2 of 48 GPUs
  o.large_in_order_overload_memory = absl::ZeroDuration();
  GangQueue q(o);
  ASSERT_TRUE(q.Enqueue(qt::Gang("old", 4, 8), t_).ok());
  ASSERT_TRUE(q.Enqueue(qt::Gang("young", 2, 8), t_ + absl::Seconds(1)).ok());
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Minutes(11)).empty());
  EXPECT_TRUE(q.LargeGangsOverload(t_ + absl::Hours(5))) << "48 GPUs waited after the last pass";
  ASSERT_TRUE(q.Remove(s_, "young"));
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Minutes(12)).empty());
  EXPECT_FALSE(q.LargeGangsOverload(t_ + absl::Minutes(12)));
}

}  // namespace
}  // namespace topogang
