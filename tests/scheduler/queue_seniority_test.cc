// QueueAdmission's arrivals: a gang keeps the arrival of its first request when it enters the
// queue again, and (Seed / Arrivals) when it asks a new leader after a restart or failover (the
// daemon keeps the arrivals in a ConfigMap, kube/queue_journal.h), so it stays ahead of gangs
// that came after it.
#include <gtest/gtest.h>

#include "scheduler/queue_admission.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using queue_test::Gang;
using queue_test::RunOn;
using testing::MakeCluster;

// One leaf of two 8-GPU nodes, the first busy: a gang of two whole nodes waits for it.
GangScheduler TwoNodesOneBusy() {
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8, "[H100]", 0, "topology: {preset: topograph}\n"));
  RunOn(s, "busy", 0, 0, 8);
  return s;
}

const absl::Time kT0 = absl::FromUnixSeconds(1764000000);

// A filter of one of the gang's pods, with nothing excluded.
absl::StatusOr<const GangRecord*> Ask(Admission& a, GangScheduler& s, const GangSpec& g,
                                      absl::Time now) {
  return a.Admit(s, g, now);
}

TEST(QueueSeniority, ASeededGangStaysAheadOfAYoungerOneThatAskedFirstAfterTheRestart) {
  GangScheduler s = TwoNodesOneBusy();
  QueueAdmission admission;  // the new leader's
  admission.Seed({{"old", {kT0 - absl::Hours(3)}}}, kT0);
  // After the restart the younger gang happens to filter first, then the old one.
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(admission, s, Gang("young", 2, 8), kT0).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("old", 2, 8), kT0 + absl::Seconds(5)).status()));
  auto arrivals = admission.Arrivals(kT0 + absl::Seconds(5));
  EXPECT_EQ(arrivals["old"].arrival, kT0 - absl::Hours(3));
  EXPECT_EQ(arrivals["young"].arrival, kT0);
  // Room for one of them: the queue starts the older, whichever pod asks.
  ASSERT_TRUE(s.Release("busy").ok());
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("young", 2, 8), kT0 + absl::Seconds(10)).status()));
  ASSERT_NE(s.Find("old"), nullptr);
  EXPECT_EQ(s.Find("old")->state, GangState::kReserved);
  EXPECT_EQ(s.Find("young"), nullptr);
}

TEST(QueueSeniority, WithoutTheSeedTheGangThatAsksFirstWins) {
  // The same run without the journal: what a restart did before.
  GangScheduler s = TwoNodesOneBusy();
  QueueAdmission admission;
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(admission, s, Gang("young", 2, 8), kT0).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("old", 2, 8), kT0 + absl::Seconds(5)).status()));
  ASSERT_TRUE(s.Release("busy").ok());
  EXPECT_TRUE(Ask(admission, s, Gang("young", 2, 8), kT0 + absl::Seconds(10)).ok());
  EXPECT_EQ(s.Find("old"), nullptr);
}

TEST(QueueSeniority, AGangThatEntersTheQueueAgainKeepsItsFirstArrival) {
  // Its reservation is dropped (a member offered other nodes, an expiry): it asks again and
  // queues from its first request, ahead of a gang that came in between.
  GangScheduler s = TwoNodesOneBusy();
  QueueAdmission admission;
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(admission, s, Gang("old", 2, 8), kT0).status()));
  ASSERT_TRUE(s.Release("busy").ok());
  ASSERT_TRUE(Ask(admission, s, Gang("old", 2, 8), kT0 + absl::Seconds(1)).ok());
  ASSERT_TRUE(s.Release("old").ok());
  RunOn(s, "busy2", 0, 0, 8);
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("young", 2, 8), kT0 + absl::Seconds(2)).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("old", 2, 8), kT0 + absl::Seconds(3)).status()));
  EXPECT_EQ(admission.Arrivals(kT0 + absl::Seconds(3))["old"].arrival, kT0);
  ASSERT_TRUE(s.Release("busy2").ok());
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("young", 2, 8), kT0 + absl::Seconds(4)).status()));
  ASSERT_NE(s.Find("old"), nullptr);
  EXPECT_EQ(s.Find("old")->state, GangState::kReserved);
}

TEST(QueueSeniority, ASeededLargeGangIsStarvedAtOnceAndHolds) {
  // 32 nodes: a 256-GPU gang (hold_min_gpus) waits for one busy node.
  GangScheduler s(MakeCluster(1, 1, 1, 32, 8, "[H100]", 0, "topology: {preset: topograph}\n"));
  RunOn(s, "busy", 0, 0, 8);
  QueueOptions opts;  // the defaults: starved after 10 minutes, then held once nearly ready
  QueueAdmission seeded(opts), fresh(opts);
  GangScheduler s2 = s;
  seeded.Seed({{"big", {kT0 - absl::Hours(1)}}}, kT0);
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(seeded, s, Gang("big", 32, 8), kT0).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(fresh, s2, Gang("big", 32, 8), kT0).status()));
  EXPECT_FALSE(queue_test::HeldNodes(s, "big").empty()) << "waited an hour: starved, holds";
  EXPECT_TRUE(queue_test::HeldNodes(s2, "big").empty()) << "a fresh arrival is not starved yet";
}

TEST(QueueSeniority, SeedsExpireAreNeverInTheFutureAndDoNotMoveAQueuedGang) {
  GangScheduler s = TwoNodesOneBusy();
  QueueAdmission admission(QueueOptions{}, absl::Minutes(6));
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(admission, s, Gang("queued", 2, 8), kT0).status()));
  admission.Seed({{"queued", {kT0 - absl::Hours(5)}},
                  {"gone", {kT0 - absl::Hours(2)}},
                  {"future", {kT0 + absl::Hours(9)}}},
                 kT0 + absl::Seconds(1));
  auto arrivals = admission.Arrivals(kT0 + absl::Seconds(1));
  EXPECT_EQ(arrivals["queued"].arrival, kT0)
      << "a gang this leader already queued keeps its arrival";
  EXPECT_EQ(arrivals["gone"].arrival, kT0 - absl::Hours(2))
      << "kept until it asks again or expires";
  EXPECT_EQ(arrivals["future"].arrival, kT0 + absl::Seconds(1))
      << "a future time is clamped to now";
  // A gang whose pods never ask again is dropped once kube-scheduler would have retried them.
  arrivals = admission.Arrivals(kT0 + absl::Minutes(7));
  EXPECT_EQ(arrivals.count("gone"), 0u);
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("gone", 2, 8), kT0 + absl::Minutes(7)).status()));
  EXPECT_EQ(admission.Arrivals(kT0 + absl::Minutes(7))["gone"].arrival, kT0 + absl::Minutes(7));
  // Forget (every pod gone) drops a seed too.
  admission.Seed({{"deleted", {kT0}}}, kT0 + absl::Minutes(7));
  admission.Forget(s, "deleted");
  EXPECT_EQ(admission.Arrivals(kT0 + absl::Minutes(7)).count("deleted"), 0u);
}

// Locality patience keeps running across a restart. One leaf of two half-busy 8-GPU nodes: a
// 2 x 4 gang fits only split across them, and waits up to 30 minutes for a node of its own. It
// had waited 25 minutes under the old leader; the new one starts it split 5 minutes after taking
// over, not 30 (and reports its patience start for the next leader).
TEST(QueueSeniority, PatienceStartedUnderAnEarlierLeaderIsNotStartedAgain) {
  for (bool seeded : {true, false}) {
    GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
    RunOn(s, "a", 0, 0, 4);
    RunOn(s, "b", 1, 0, 4);
    QueueOptions opts;
    opts.locality_patience = absl::Minutes(30);
    QueueAdmission admission(opts);
    if (seeded) {
      admission.Seed({{"pair", {kT0 - absl::Hours(1), kT0 - absl::Minutes(25)}}}, kT0);
    }
    const GangSpec pair = Gang("pair", 2, 4);
    auto r = Ask(admission, s, pair, kT0);
    ASSERT_TRUE(absl::IsResourceExhausted(r.status())) << "seeded " << seeded;
    EXPECT_NE(r.status().message().find("better-connected"), std::string::npos) << r.status();
    EXPECT_EQ(admission.Arrivals(kT0)["pair"].could_start, seeded ? kT0 - absl::Minutes(25) : kT0);
    r = Ask(admission, s, pair, kT0 + absl::Minutes(5));
    EXPECT_EQ(r.ok(), seeded) << "seeded " << seeded << ": " << r.status();
  }
}

// A seeded arrival with no patience started (a bare number in the journal) keeps none started:
// the gang's patience starts when it first could start on a slower placement, not at the
// failover, and it is written back as a bare arrival.
TEST(QueueSeniority, ASeededArrivalWithoutPatienceStartsNone) {
  GangScheduler s = TwoNodesOneBusy();
  QueueAdmission admission;
  admission.Seed({{"g", {kT0 - absl::Hours(1)}}}, kT0);
  EXPECT_EQ(admission.Arrivals(kT0)["g"], (QueueSeniority{kT0 - absl::Hours(1)}));
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(admission, s, Gang("g", 2, 8), kT0).status()));
  EXPECT_EQ(admission.Arrivals(kT0)["g"], (QueueSeniority{kT0 - absl::Hours(1)}))
      << "its patience was started at the failover";
}

TEST(QueueSeniority, ARequiredTierLapsesFromTheSeededArrival) {
  GangScheduler s = TwoNodesOneBusy();
  QueueAdmission admission;
  GangSpec g = Gang("pair", 2, 8);
  g.required_tier = "leaf";
  g.required_tier_max_wait = absl::Minutes(30);
  admission.Seed({{"pair", {kT0 - absl::Minutes(20)}}}, kT0);
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(admission, s, g, kT0).status()));
  EXPECT_EQ(admission.Effective(s, g, kT0 + absl::Minutes(9)).required_tier, "leaf");
  EXPECT_EQ(admission.Effective(s, g, kT0 + absl::Minutes(10)).required_tier, "")
      << "30 minutes after the arrival the earlier leader saw, not after the restart";
}

// Queued (the daemon's topogang_queue_* gauges): the waiting gangs by size, and each size's
// longest wait from the gang's arrival, a seeded one included.
TEST(QueueSeniority, QueuedCountsTheWaitingGangsBySizeWithTheLongestWaitSinceArrival) {
  GangScheduler s = TwoNodesOneBusy();
  QueueOptions o;
  o.hold_min_gpus = 16;
  QueueAdmission admission(o);
  Admission::Waiting w = admission.Queued(kT0);
  EXPECT_EQ(w.large + w.small, 0);
  EXPECT_EQ(w.longest_large, absl::ZeroDuration());
  admission.Seed({{"old", {kT0 - absl::Hours(2)}}}, kT0);  // an earlier leader's record
  EXPECT_TRUE(absl::IsResourceExhausted(Ask(admission, s, Gang("old", 2, 8), kT0).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("small", 3, 4), kT0 + absl::Minutes(1)).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Ask(admission, s, Gang("young", 2, 8), kT0 + absl::Minutes(2)).status()));
  w = admission.Queued(kT0 + absl::Minutes(4));
  EXPECT_EQ(w.large, 2);
  EXPECT_EQ(w.small, 1);
  EXPECT_EQ(w.longest_large, absl::Hours(2) + absl::Minutes(4));
  EXPECT_EQ(w.longest_small, absl::Minutes(3));
  // Room for one large gang (within the 6 minutes a gang that stopped asking stays queued): the
  // oldest starts, and the younger one's wait is the longest now.
  ASSERT_TRUE(s.Release("busy").ok());
  admission.Pass(s, kT0 + absl::Minutes(5), {}, {});
  ASSERT_NE(s.Find("old"), nullptr);
  w = admission.Queued(kT0 + absl::Minutes(5));
  EXPECT_EQ(w.large, 1);
  EXPECT_EQ(w.small, 1);
  EXPECT_EQ(w.longest_large, absl::Minutes(3));
  // The default admission has no queue.
  EXPECT_EQ(DirectAdmission().Queued(kT0).large, 0);
}

}  // namespace
}  // namespace topogang
