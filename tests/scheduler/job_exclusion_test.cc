#include "scheduler/job_exclusion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/node_slowness.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakeCluster;

GangSpec Gang(std::string name, int members, int gpus) {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  return g;
}

const absl::Time kT0 = absl::UnixEpoch();

TEST(NodeSlowness, SignalsAddUpAndDecay) {
  NodeSlowness s;  // half-life 30 min, threshold 1, ECC/replay/throttle 0.5, NCCL test 1
  s.Report(3, SlownessSignal::kCorrectableEccBurst, kT0);
  EXPECT_DOUBLE_EQ(s.Score(3, kT0), 0.5);
  EXPECT_FALSE(s.IsSlow(3, kT0));
  s.Report(3, SlownessSignal::kLinkReplay, kT0);
  EXPECT_TRUE(s.IsSlow(3, kT0)) << "two signals at once cross the threshold";
  EXPECT_NEAR(s.Score(3, kT0 + absl::Minutes(30)), 0.5, 1e-9) << "halved after one half-life";
  EXPECT_FALSE(s.IsSlow(3, kT0 + absl::Minutes(30)));
  s.Report(5, SlownessSignal::kSlowNcclTest, kT0, 2.0);
  EXPECT_THAT(s.SlowNodes(kT0), ElementsAre(3, 5));
  auto b = s.Breakdown(3, kT0);
  EXPECT_DOUBLE_EQ(b[static_cast<int>(SlownessSignal::kCorrectableEccBurst)], 0.5);
  EXPECT_DOUBLE_EQ(b[static_cast<int>(SlownessSignal::kClockThrottle)], 0.0);
  // A late report for an earlier time does not undo decay.
  s.Report(3, SlownessSignal::kClockThrottle, kT0 - absl::Minutes(5));
  EXPECT_NEAR(s.Score(3, kT0), 1.5, 1e-9);
  s.Prune(kT0 + absl::Hours(24));
  EXPECT_EQ(s.Score(3, kT0 + absl::Hours(24)), 0);
  EXPECT_THAT(s.SlowNodes(kT0 + absl::Hours(24)), IsEmpty());
}

// One leaf of four 8-GPU nodes; node 0 is slow; "large" means at least 16 GPUs. A filler holds
// node 3, so the only free nodes are 0, 1 and 2.
TEST(JobExclusion, SlowNodeIsAvoidedByLargeGangsOnly) {
  GangScheduler s(MakeCluster(1, 1, 1, 4, 8));
  Placement filler;
  filler.members.push_back({3, {}});
  for (int g = 0; g < 8; ++g) filler.members[0].gpus.push_back(s.cluster().node(3).gpu_begin + g);
  ASSERT_TRUE(s.Adopt(Gang("filler", 1, 8), filler, GangState::kRunning, kT0).ok());
  NodeSlowness slowness;
  slowness.Report(0, SlownessSignal::kCorrectableEccBurst, kT0, 3);  // score 1.5
  JobExclusion ex(slowness, ExclusionOptions{16});
  EXPECT_THAT(ex.Excluded(Gang("large", 2, 8), kT0), ElementsAre(0));
  EXPECT_THAT(ex.Excluded(Gang("small", 1, 8), kT0), IsEmpty());
  EXPECT_THAT(ex.Explain(Gang("large", 2, 8), kT0)[0].second, HasSubstr("slow (score 1.50"));

  // Through the queue: the large gang gets nodes 1 and 2 (though best fit alone would start at
  // node 0), the small one the slow node 0, the only one left.
  GangQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("large", 2, 8), kT0).ok());
  ASSERT_TRUE(q.Enqueue(Gang("small", 1, 8), kT0 + absl::Seconds(1)).ok());
  ASSERT_THAT(q.Schedule(s, kT0, ex.ForQueue(kT0)), ElementsAre("large", "small"));
  EXPECT_EQ(s.Find("large")->placement.Nodes(), (std::vector<int>{1, 2}));
  EXPECT_EQ(s.Find("small")->placement.Nodes(), (std::vector<int>{0}));
  EXPECT_TRUE(s.CheckInvariants().ok()) << "the exclusion mask was undone";
}

TEST(JobExclusion, LargeGangWaitsRatherThanUseASlowNode) {
  // Two free nodes, one of them slow: a 2-node large gang does not start; once the score has
  // decayed below the threshold (two half-lives: 1.5 -> 0.375) it does.
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  NodeSlowness slowness;
  slowness.Report(1, SlownessSignal::kClockThrottle, kT0, 3);
  JobExclusion ex(slowness, ExclusionOptions{16});
  GangQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("large", 2, 8), kT0).ok());
  EXPECT_THAT(q.Schedule(s, kT0, ex.ForQueue(kT0)), IsEmpty());
  const absl::Time later = kT0 + absl::Hours(1);
  EXPECT_THAT(q.Schedule(s, later, ex.ForQueue(later)), ElementsAre("large"));
}

TEST(JobExclusion, NamedNodesAndPreviousFailuresApplyToAnyGang) {
  NodeSlowness slowness;
  JobExclusion ex(slowness, ExclusionOptions{1000});
  ex.AvoidNodes("job", {7, 2});
  ex.RecordFailure("job", 4);
  ex.RecordFailure("job", 2);
  EXPECT_THAT(ex.Excluded(Gang("job", 1, 1), kT0), ElementsAre(2, 4, 7));
  auto why = ex.Explain(Gang("job", 1, 1), kT0);
  EXPECT_EQ(why[0].second, "named by the gang; an earlier attempt failed here");
  EXPECT_THAT(ex.Excluded(Gang("other", 1, 1), kT0), IsEmpty());
  // A restarted gang (same name) avoids where it failed; a finished one is forgotten.
  GangScheduler s(MakeCluster(1, 1, 1, 2, 8));
  ex.Forget("job");
  ex.RecordFailure("job", 0);
  GangQueue q;
  ASSERT_TRUE(q.Enqueue(Gang("job", 1, 8), kT0).ok());
  ASSERT_THAT(q.Schedule(s, kT0, ex.ForQueue(kT0)), ElementsAre("job"));
  EXPECT_EQ(s.Find("job")->placement.Nodes(), (std::vector<int>{1}));
}

}  // namespace
}  // namespace topogang
