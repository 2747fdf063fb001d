#include "sim/generator.h"

#include <gtest/gtest.h>

namespace topogang::sim {
namespace {

GeneratorOptions Opts(uint64_t seed) {
  GeneratorOptions o;
  o.jobs = 3000;
  o.seed = seed;
  o.cluster_gpus = 4096;
  o.load = 0.8;
  o.spine_gpus = 1024;
  return o;
}

TEST(Generator, SameSeedSameTraceOtherSeedOtherTrace) {
  auto a = GenerateTrace(Opts(3)), b = GenerateTrace(Opts(3)), c = GenerateTrace(Opts(4));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(WriteTraceCsv(*a), WriteTraceCsv(*b));
  EXPECT_NE(WriteTraceCsv(*a), WriteTraceCsv(*c));
}

TEST(Generator, OffersTheRequestedLoadWithAHeavyTail) {
  auto t = GenerateTrace(Opts(9));
  ASSERT_TRUE(t.ok());
  double work = 0, big = 0;
  int small = 0;
  for (const TraceJob& j : t->jobs) {
    EXPECT_LE(j.total_gpus(), 1024);  // a quarter of the cluster
    EXPECT_GE(j.duration_s, 60);
    EXPECT_GE(j.comm_fraction, 0);
    EXPECT_LE(j.comm_fraction, 1);
    work += j.total_gpus() * j.duration_s;
    if (j.total_gpus() >= 64) big += j.total_gpus() * j.duration_s;
    small += j.total_gpus() <= 8;
  }
  const double span = t->jobs.back().arrival_s;
  EXPECT_NEAR(work / (span * 4096), 0.8, 0.08);
  EXPECT_GT(small, 0.75 * t->jobs.size());  // most jobs are small ...
  EXPECT_GT(big / work, 0.5);               // ... the few large ones hold most GPU-time
  // Arrivals are ordered and the CSV parses back.
  auto back = ParseTraceCsv(WriteTraceCsv(*t), "gen");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->jobs.size(), t->jobs.size());
}

TEST(Generator, FailureRowsNameKnownNodes) {
  GeneratorOptions o = Opts(2);
  o.failures_per_node_day = 0.5;
  o.node_names = {"a", "b", "c"};
  auto t = GenerateTrace(o);
  ASSERT_TRUE(t.ok());
  ASSERT_FALSE(t->events.empty());
  for (const NodeEvent& e : t->events) {
    EXPECT_TRUE(e.node == "a" || e.node == "b" || e.node == "c");
    EXPECT_EQ(e.kind, NodeEvent::Kind::kFail);
  }
}

TEST(Generator, RejectsBadOptions) {
  GeneratorOptions o = Opts(1);
  o.profile = "nope";
  EXPECT_FALSE(GenerateTrace(o).ok());
  o = Opts(1);
  o.jobs = 0;
  EXPECT_FALSE(GenerateTrace(o).ok());
  o = Opts(1);
  o.load = -1;
  EXPECT_FALSE(GenerateTrace(o).ok());
}

}  // namespace
}  // namespace topogang::sim
