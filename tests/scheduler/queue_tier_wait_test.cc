// GangSpec::required_tier_max_wait in the queue: a required tier binds for that long, then the
// gang is placed as if the tier were preferred (Slurm's --switches=N@max-time).
#include <gtest/gtest.h>

#include "scheduler/queue_admission.h"
#include "scheduler/queue_policy.h"
#include "scheduler/tier_lapse.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using queue_test::Gang;
using queue_test::RunOn;
using testing::MakeCluster;

// Two islands of one leaf of two 8-GPU nodes, 7:1 oversubscribed between the islands; the first
// node of each leaf busy, so a gang of two whole nodes fits only across the leaves (nodes 1 and
// 3), slower than inside one: locality patience would wait for that.
GangScheduler SplitLeaves() {
  GangScheduler s(MakeCluster(2, 1, 1, 2, 8, "[H100]", 0,
                              "topology: {preset: topograph, cluster_oversubscription: 7}\n"));
  RunOn(s, "a", 0, 0, 8);
  RunOn(s, "b", 2, 0, 8);
  return s;
}

GangSpec LeafPair(absl::Duration max_wait) {
  GangSpec g = Gang("pair", 2, 8);
  g.required_tier = "leaf";
  g.required_tier_max_wait = max_wait;
  return g;
}

TEST(RequiredTierMaxWait, BindsUntilTheWaitThenPlacesAcrossTheTierWithoutPatience) {
  GangScheduler s = SplitLeaves();
  GangQueue q;  // the defaults, 30 minutes of locality patience included
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(LeafPair(absl::Minutes(5)), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(q.NextDeadline(t), t + absl::Minutes(5)) << "the lapse is a deadline to wake for";
  EXPECT_TRUE(q.Schedule(s, t + absl::Minutes(5) - absl::Seconds(1)).empty());
  // At the lapse it starts across the two leaves at once: it has waited, so no patience.
  ASSERT_EQ(q.Schedule(s, t + absl::Minutes(5)), std::vector<std::string>{"pair"});
  const GangRecord* r = s.Find("pair");
  EXPECT_EQ(r->placement.Nodes(), (std::vector<int>{1, 3}));
  EXPECT_EQ(r->spec.required_tier, "") << "replacements may leave the leaf too";
  EXPECT_EQ(r->spec.preferred_tier, "leaf");
}

TEST(RequiredTierMaxWait, ATierThatFreesUpInTimeIsStillUsed) {
  GangScheduler s = SplitLeaves();
  GangQueue q;
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(LeafPair(absl::Minutes(5)), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  ASSERT_TRUE(s.Release("b").ok());  // the second leaf frees before the lapse
  ASSERT_EQ(q.Schedule(s, t + absl::Minutes(2)), std::vector<std::string>{"pair"});
  EXPECT_EQ(s.Find("pair")->placement.Nodes(), (std::vector<int>{2, 3}));
  EXPECT_EQ(s.Find("pair")->spec.required_tier, "leaf");
}

TEST(RequiredTierMaxWait, ByDefaultTheRequirementNeverLapses) {
  GangScheduler s = SplitLeaves();
  GangQueue q;
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(LeafPair(absl::InfiniteDuration()), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(q.NextDeadline(t), absl::InfiniteFuture());
  EXPECT_TRUE(q.Schedule(s, t + absl::Hours(24 * 365)).empty());
  EXPECT_EQ(s.Find("pair"), nullptr);
}

TEST(RequiredTierMaxWait, ZeroMeansPreferredFromTheStart) {
  GangScheduler s = SplitLeaves();
  GangQueue q;
  ASSERT_TRUE(q.Enqueue(LeafPair(absl::ZeroDuration()), absl::UnixEpoch()).ok());
  EXPECT_EQ(q.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{"pair"});
}

TEST(RequiredTierMaxWait, ANarrowerPreferenceIsKept) {
  // Required spine, preferred leaf: after the lapse the leaf stays the preference, not the spine.
  GangScheduler s(MakeCluster(1, 2, 1, 2, 8));
  RunOn(s, "a", 0, 0, 8);
  RunOn(s, "b", 2, 0, 8);
  GangSpec g = Gang("pair", 2, 8);
  g.required_tier = "spine";
  g.preferred_tier = "leaf";
  g.required_tier_max_wait = absl::Minutes(1);
  GangQueue q;
  ASSERT_TRUE(q.Enqueue(g, absl::UnixEpoch()).ok());
  EXPECT_TRUE(q.Schedule(s, absl::UnixEpoch()).empty());
  ASSERT_EQ(q.Schedule(s, absl::UnixEpoch() + absl::Minutes(1)), std::vector<std::string>{"pair"});
  EXPECT_EQ(s.Find("pair")->spec.preferred_tier, "leaf");
  EXPECT_EQ(s.Find("pair")->placement.Nodes(), (std::vector<int>{1, 3}));
}

TEST(RequiredTierMaxWait, AnUnknownTierNeverLapsesSoItsErrorStands) {
  GangScheduler s = SplitLeaves();
  GangSpec g = LeafPair(absl::ZeroDuration());
  g.required_tier = "rack";  // not a tier of this cluster
  g.preferred_tier = "leaf";
  EXPECT_FALSE(TierLapsed(s.cluster(), g, absl::Hours(1)));
  EXPECT_TRUE(TierLapsed(s.cluster(), LeafPair(absl::ZeroDuration()), absl::ZeroDuration()));
  GangQueue q;
  ASSERT_TRUE(q.Enqueue(g, absl::UnixEpoch()).ok());
  EXPECT_TRUE(q.Schedule(s, absl::UnixEpoch() + absl::Hours(1)).empty());
  EXPECT_EQ(s.Find("pair"), nullptr);
}

// The daemon's admission: the wait counts from the gang's first request, across re-plans.
TEST(RequiredTierMaxWait, AReplannedGangKeepsTheWaitItHasDone) {
  GangScheduler s = SplitLeaves();
  QueueAdmission admission;
  const absl::Time t = absl::UnixEpoch();
  const GangSpec pair = LeafPair(absl::Minutes(5));
  EXPECT_TRUE(absl::IsResourceExhausted(admission.Admit(s, pair, t, {}).status()));
  EXPECT_EQ(admission.Effective(s, pair, t).required_tier, "leaf");
  auto r = admission.Admit(s, pair, t + absl::Minutes(5), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->placement.Nodes(), (std::vector<int>{1, 3}));
  EXPECT_EQ(admission.Effective(s, pair, t + absl::Minutes(5)).required_tier, "")
      << "preemption and elastic starts see the lapse too";
  // The reservation is dropped for a re-plan (a member offered other nodes, an expiry): the
  // gang asks again and starts at once, without a second wait.
  ASSERT_TRUE(s.Release("pair").ok());
  r = admission.Admit(s, pair, t + absl::Minutes(6), {});
  ASSERT_TRUE(r.ok()) << r.status();
  // Every pod gone: forgotten, so the same name later waits from its own first request.
  ASSERT_TRUE(s.Release("pair").ok());
  admission.Forget(s, "pair");
  EXPECT_TRUE(
      absl::IsResourceExhausted(admission.Admit(s, pair, t + absl::Minutes(7), {}).status()));
  EXPECT_TRUE(admission.Admit(s, pair, t + absl::Minutes(12), {}).ok());
}

TEST(RequiredTierMaxWait, ANegativeWaitIsRefused) {
  GangSpec g = LeafPair(-absl::Seconds(1));
  EXPECT_EQ(ValidateGang(g).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateGang(LeafPair(absl::ZeroDuration())).ok());
}

}  // namespace
}  // namespace topogang
