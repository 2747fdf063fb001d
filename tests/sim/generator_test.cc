#include "sim/generator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

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

TEST(Generator, NewAttributesLeaveTheJobsOfASeedAsTheyWere) {
  // Estimates and GPU models come from their own random streams: switching them off or on
  // changes nothing else, so traces generated before they existed regenerate identically.
  GeneratorOptions plain = Opts(7);
  plain.estimate_share = 0;
  GeneratorOptions rich = Opts(7);
  rich.estimate_share = 1;
  rich.skus = {{"H100", 2048}, {"A100", 2048}};
  auto a = GenerateTrace(plain), b = GenerateTrace(rich);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->jobs.size(), b->jobs.size());
  int a100 = 0;
  for (size_t i = 0; i < a->jobs.size(); ++i) {
    const TraceJob &x = a->jobs[i], &y = b->jobs[i];
    EXPECT_EQ(x.arrival_s, y.arrival_s);
    EXPECT_EQ(x.members, y.members);
    EXPECT_EQ(x.gpus_per_member, y.gpus_per_member);
    EXPECT_EQ(x.duration_s, y.duration_s);
    EXPECT_EQ(x.estimate_s, 0);
    EXPECT_GE(y.estimate_s, y.duration_s) << "users over-estimate";
    EXPECT_TRUE(y.sku == "H100" || y.sku == "A100") << y.sku;
    a100 += y.sku == "A100";
  }
  EXPECT_NEAR(a100, a->jobs.size() / 2.0, a->jobs.size() * 0.05) << "drawn by GPU share";
}

TEST(Generator, UserEstimatesAreRoundOverEstimatesOrTheMaximum) {
  Rng rng(3);
  const std::set<double> round = {900,   1800,  3600,   7200,   14400, 28800,
                                  43200, 86400, 172800, 259200, 604800};
  int at_max = 0;
  for (int i = 0; i < 2000; ++i) {
    const double d = 60 + 3600 * rng.Uniform() * 10;
    const double e = UserEstimate(d, 604800, rng);
    EXPECT_GE(e, d);
    EXPECT_LE(e, 604800);
    EXPECT_TRUE(round.count(e) > 0) << e;
    at_max += e == 604800;
  }
  EXPECT_NEAR(at_max, 400, 120) << "about a fifth give the maximum (plus long jobs)";
  // Longer than the maximum: the duration itself (the trace's runs never exceed it anyway).
  EXPECT_EQ(UserEstimate(700000, 604800, rng), 700000);
}

TEST(Generator, ModelsOnlyWhereTheJobFits) {
  GeneratorOptions o = Opts(4);
  o.skus = {{"H100", 4000}, {"A100", 96}};  // A100 holds no job above 24 GPUs
  auto t = GenerateTrace(o);
  ASSERT_TRUE(t.ok());
  for (const TraceJob& j : t->jobs) {
    if (j.sku == "A100") {
      EXPECT_LE(4 * j.total_gpus(), 96) << j.id;
    }
  }
}

TEST(Generator, Nvl72GangsAreWholeTraysAndAskForTheirNvlinkDomain) {
  GeneratorOptions o = Opts(5);
  o.profile = "nvl72";
  o.cluster_gpus = 1152;
  o.gpus_per_node = 4;
  o.nvlink_tier = "nvlink";
  o.nvlink_gpus = 72;
  auto t = GenerateTrace(o);
  ASSERT_TRUE(t.ok()) << t.status();
  int required = 0, preferred = 0, multi_small = 0;
  for (const TraceJob& j : t->jobs) {
    if (j.members > 1) {
      EXPECT_EQ(j.gpus_per_member, 4) << j.id;
      if (j.total_gpus() <= 72) {
        ++multi_small;
        required += j.required_tier == "nvlink";
        preferred += j.preferred_tier == "nvlink";
        EXPECT_EQ((j.required_tier == "nvlink") + (j.preferred_tier == "nvlink"), 1) << j.id;
      } else {
        EXPECT_EQ(j.preferred_tier, "leaf") << j.id;
      }
    }
    EXPECT_LE(j.total_gpus(), 288);  // a quarter of the cluster
  }
  ASSERT_GT(multi_small, 100);
  EXPECT_NEAR(static_cast<double>(required) / multi_small, 0.7, 0.08);
}

TEST(Generator, CorrelatedFailuresTakeAWholeGroupDownAtOnce) {
  GeneratorOptions o = Opts(6);
  o.failures_per_node_day = 0.5;
  o.node_names = {"a0", "a1", "b0", "b1"};
  o.failure_groups = {{"a0", "a1"}, {"b0", "b1"}};
  o.correlated_share = 1;
  auto t = GenerateTrace(o);
  ASSERT_TRUE(t.ok());
  ASSERT_FALSE(t->events.empty());
  std::map<double, std::set<std::string>> by_time;
  for (const NodeEvent& e : t->events) by_time[e.time_s].insert(e.node);
  for (const auto& [time, nodes] : by_time) {
    EXPECT_TRUE(nodes == std::set<std::string>({"a0", "a1"}) ||
                nodes == std::set<std::string>({"b0", "b1"}))
        << time;
  }
  o.correlated_share = 0;  // single nodes only
  auto single = GenerateTrace(o);
  ASSERT_TRUE(single.ok());
  std::map<double, int> per_time;
  for (const NodeEvent& e : single->events) ++per_time[e.time_s];
  for (const auto& [time, n] : per_time) EXPECT_EQ(n, 1) << time;
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
  o = Opts(1);
  o.estimate_share = 2;
  EXPECT_FALSE(GenerateTrace(o).ok());
}

}  // namespace
}  // namespace topogang::sim
