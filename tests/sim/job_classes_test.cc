#include "sim/job_classes.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace topogang::sim {
namespace {

JobResult Job(int members, long gpus, double arrival, double start, double end, double stretch) {
  JobResult j;
  j.members = members;
  j.gpus = gpus;
  j.arrival = arrival;
  j.start = start;
  j.end = end;
  j.stretch = stretch;
  return j;
}

TEST(JobClasses, ByShapeAgainstNodeAndLeaf) {
  // Nodes of 8 GPUs, leaves of 4 nodes = 32 GPUs.
  Cluster c = testing::MakeCluster(1, 1, 2, 4, 8);
  EXPECT_EQ(ClassOf(c, 1, 8), JobClass::kSinglePod);
  EXPECT_EQ(ClassOf(c, 4, 8), JobClass::kWithinNode);  // 4 x 2 GPUs
  EXPECT_EQ(ClassOf(c, 2, 16), JobClass::kWithinLeaf);
  EXPECT_EQ(ClassOf(c, 4, 32), JobClass::kWithinLeaf);
  EXPECT_EQ(ClassOf(c, 5, 40), JobClass::kLarger);
}

TEST(JobClasses, UnfinishedJobsCountToTheEndOfTheRun) {
  Cluster c = testing::MakeCluster(1, 1, 2, 4, 8);
  std::vector<JobResult> jobs = {
      Job(1, 1, 0, 0, 60, 1),      // single pod: JCT 60
      Job(2, 4, 0, 10, 130, 2),    // fits a node: JCT 130, stretch 2
      Job(2, 4, 100, -1, -1, 1),   // fits a node, never started: JCT 1000 - 100 = 900
      Job(2, 16, 0, 0, 600, 1.5),  // fits a leaf
  };
  JobResult never;
  never.members = 9;
  never.gpus = 72;
  never.unschedulable = true;  // left out
  jobs.push_back(never);
  auto s = StatsByClass(c, jobs, 1000);
  EXPECT_EQ(s[0].jobs, 1);
  EXPECT_DOUBLE_EQ(s[0].mean_jct, 60);
  EXPECT_EQ(s[1].jobs, 2);
  EXPECT_EQ(s[1].unfinished, 1);
  EXPECT_DOUBLE_EQ(s[1].mean_jct, (130 + 900) / 2.0);
  EXPECT_DOUBLE_EQ(s[1].mean_stretch, 2);  // of the started one only
  EXPECT_DOUBLE_EQ(s[2].mean_stretch, 1.5);
  EXPECT_EQ(s[3].jobs, 0);
}

}  // namespace
}  // namespace topogang::sim
