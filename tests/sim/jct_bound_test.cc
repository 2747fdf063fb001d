#include "sim/jct_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/engine.h"
#include "sim/generator.h"
#include "tests/test_util.h"

namespace topogang::sim {
namespace {

constexpr double kStep = 1;  // the bound may sit up to one step per job below the true optimum

JctBoundOptions Step1(double large_max_wait = std::numeric_limits<double>::infinity(),
                      long large_gpus = 256) {
  JctBoundOptions o;
  o.step_s = kStep;
  o.large_max_wait_s = large_max_wait;
  o.large_gpus = large_gpus;
  return o;
}

TEST(MeanJctLowerBound, OneJobTakesItsDuration) {
  auto b = MeanJctLowerBound({{0, 8, 100}}, 8, Step1());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_LE(*b, 100);
  EXPECT_GE(*b, 100 - kStep);
}

TEST(MeanJctLowerBound, JobsThatCannotShareThePoolQueue) {
  // Two 8-GPU jobs of 100 s on 8 GPUs: one ends at 100, the other at 200 whatever the order;
  // mean 150. The fluid pool gives the same: 800 GPU-s each at 8 GPU/s.
  auto b = MeanJctLowerBound({{0, 8, 100}, {0, 8, 100}}, 8, Step1());
  ASSERT_TRUE(b.ok());
  EXPECT_LE(*b, 150);
  EXPECT_GE(*b, 150 - kStep);
}

TEST(MeanJctLowerBound, ArrivalsLaterThanTheQueueCountFromThemselves) {
  // Job b arrives at 300 on an idle pool: JCTs 100 and 50, mean 75.
  auto b = MeanJctLowerBound({{0, 4, 100}, {300, 4, 50}}, 8, Step1());
  ASSERT_TRUE(b.ok());
  EXPECT_LE(*b, 75);
  EXPECT_GE(*b, 75 - kStep);
}

TEST(MeanJctLowerBound, PromisingTheLargeGangItsStartCostsTheSmallJob) {
  // 8 GPUs; L: 8 GPUs x 100 s (large: >= 8 GPUs here), S: 4 GPUs x 10 s, both at 0; they cannot
  // overlap (12 > 8).
  // No promise: the best is S then L, JCTs 10 and 110, mean 60. The bound: S's 40 GPU-s are done
  // at 5 in the pool but S cannot end before 10; L's 840 GPU-s all at 105: (10 + 105) / 2 = 57.5.
  // L promised to start at once (W = 0): it holds the pool until 100, so S's allowance is 0 until
  // then and S ends at 105 at the earliest: (100 + 105) / 2 = 102.5 (the best schedule: L then
  // S, mean (100 + 110) / 2 = 105).
  const std::vector<BoundJob> jobs = {{0, 8, 100}, {0, 4, 10}};
  auto free = MeanJctLowerBound(jobs, 8, Step1(std::numeric_limits<double>::infinity(), 8));
  auto promised = MeanJctLowerBound(jobs, 8, Step1(0, 8));
  ASSERT_TRUE(free.ok() && promised.ok()) << promised.status();
  EXPECT_LE(*free, 57.5);
  EXPECT_GE(*free, 57.5 - kStep);
  EXPECT_LE(*promised, 102.5);
  EXPECT_GE(*promised, 102.5 - kStep);
  // A promise of 200 s is kept by S then L at no cost.
  auto loose = MeanJctLowerBound(jobs, 8, Step1(200, 8));
  ASSERT_TRUE(loose.ok());
  EXPECT_DOUBLE_EQ(*loose, *free);
}

TEST(MeanJctLowerBound, ZeroWorkJobsEndAtArrivalEvenWhenThePoolIsTaken) {
  // L holds the pool from 0 to 100 under its promise; Z has no work and ends when it arrives.
  auto b = MeanJctLowerBound({{0, 8, 100}, {10, 4, 0}}, 8, Step1(0, 8));
  ASSERT_TRUE(b.ok());
  EXPECT_LE(*b, 50);
  EXPECT_GE(*b, 50 - kStep);
}

TEST(MeanJctLowerBound, APromiseThatCannotBeKeptIsAnError) {
  // Two 8-GPU gangs at 0 on 8 GPUs cannot both start at once.
  auto b = MeanJctLowerBound({{0, 8, 100}, {0, 8, 100}}, 8, Step1(0, 8));
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("cannot all start within 0 s"), std::string::npos);
  EXPECT_TRUE(MeanJctLowerBound({{0, 8, 100}, {0, 8, 100}}, 8, Step1(100, 8)).ok());
}

TEST(MeanJctLowerBound, RefusesWhatItCannotBound) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(MeanJctLowerBound({{0, 9, 1}}, 8).status().code(),
            absl::StatusCode::kInvalidArgument);  // larger than the pool
  EXPECT_FALSE(MeanJctLowerBound({{0, 0, 1}}, 8).ok());
  EXPECT_FALSE(MeanJctLowerBound({{nan, 1, 1}}, 8).ok());
  EXPECT_FALSE(MeanJctLowerBound({{0, 1, -1}}, 8).ok());
  EXPECT_FALSE(MeanJctLowerBound({{0, 1, inf}}, 8).ok());
  EXPECT_FALSE(MeanJctLowerBound({{1e300, 1, 1}}, 8).ok());
  EXPECT_FALSE(MeanJctLowerBound({{0, 1, 1}}, 0).ok());
  JctBoundOptions o;
  o.step_s = 0;
  EXPECT_FALSE(MeanJctLowerBound({{0, 1, 1}}, 8, o).ok());
  o = {};
  o.large_max_wait_s = -1;
  EXPECT_FALSE(MeanJctLowerBound({{0, 1, 1}}, 8, o).ok());
  o.large_max_wait_s = 1e300;
  EXPECT_FALSE(MeanJctLowerBound({{0, 1, 1}}, 8, o).ok());
  EXPECT_EQ(*MeanJctLowerBound({}, 8), 0);
}

TEST(MeanJctLowerBound, AHugeSpanWidensTheStepInsteadOfRunningForever) {
  // A year between two arrivals at a 1 s step would be 3e7 steps; the step widens to keep
  // kMaxBoundSteps, and the bound stays below the true 100 s.
  auto b = MeanJctLowerBound({{0, 1, 100}, {3.2e7, 1, 100}}, 8, Step1());
  ASSERT_TRUE(b.ok());
  EXPECT_LE(*b, 100);
  EXPECT_GT(*b, 80);
}

// The bound is below what every simulated policy reaches on a generated overloaded trace, also
// under each policy's own longest 256+ wait as the promise, and never below the mean duration.
TEST(MeanJctLowerBound, NoSimulatedPolicyBeatsIt) {
  auto t = GenerateTrace([] {
    GeneratorOptions o;
    o.jobs = 400;
    o.cluster_gpus = 512;
    o.max_job_gpus = 256;
    o.profile = "llm";
    o.seed = 3;
    o.load = 2;
    return o;
  }());
  ASSERT_TRUE(t.ok());
  Cluster c = testing::MakeCluster(2, 2, 4, 4, 8);
  ASSERT_EQ(c.num_gpus(), 512);
  std::vector<BoundJob> jobs;
  double mean_duration = 0;
  int large = 0;
  for (const TraceJob& j : t->jobs) {
    jobs.push_back({j.arrival_s, j.total_gpus(), j.duration_s});
    mean_duration += j.duration_s / static_cast<double>(t->jobs.size());
    large += j.total_gpus() >= 256;
  }
  ASSERT_GT(large, 0);
  auto bound = MeanJctLowerBound(jobs, c.num_gpus());
  ASSERT_TRUE(bound.ok()) << bound.status();
  // No job ends before its duration: on these traces that is most of the bound (the pool's
  // SRPT finishes the small jobs at once and the few large gangs hold little of the count).
  EXPECT_GE(*bound, mean_duration * (1 - 1e-12));
  for (const std::string& policy : PolicyNames()) {
    auto r = Simulate(c, *t, policy, SimOptions{});
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status();
    ASSERT_EQ(r->summary.jobs, static_cast<int>(jobs.size())) << policy;
    EXPECT_LE(*bound, r->summary.mean_jct) << policy;
    if (r->summary.never_started_256 > 0) continue;
    JctBoundOptions promised;
    promised.large_max_wait_s = r->summary.max_wait_256;
    auto b = MeanJctLowerBound(jobs, c.num_gpus(), promised);
    ASSERT_TRUE(b.ok()) << policy << ": " << b.status();
    EXPECT_GE(*b, *bound) << policy;
    EXPECT_LE(*b, r->summary.mean_jct) << policy;
  }
}

}  // namespace
}  // namespace topogang::sim
