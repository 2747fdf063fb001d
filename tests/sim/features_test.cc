// The policies of issue #13 in the simulator: preemption, elastic gangs, hot spares (sim/
// topogang_policy.cc on the core's scheduler/preemption.h, elastic.h, spares.h). Hand-made
// traces on tiny clusters, with the expected times worked out in the comments; comm_fraction 0
// and the proxy model, so placements do not stretch run times.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "sim/engine.h"
#include "sim/feature_report.h"
#include "sim/generator.h"
#include "sim/policy.h"
#include "sim/policy_features.h"
#include "sim/trace_features.h"
#include "tests/sim/mini_trace.h"
#include "tests/test_util.h"

namespace topogang::sim {
namespace {

using ::testing::HasSubstr;

// Traces with the columns of issue #13: priority and min_members.
Trace Parse(const std::string& body) {
  return mini::ParseUnder(
      "id,arrival_s,members,gpus_per_member,duration_s,comm_fraction,required_tier,priority,"
      "min_members",
      body);
}

SimOptions Exact() {
  SimOptions o;
  o.comm_model = CommModel::kProxy;
  o.restart_cost_s = 600;
  return o;
}

const JobResult& Find(const PolicyResult& r, const std::string& id) {
  for (const JobResult& j : r.jobs) {
    if (j.id == id) return j;
  }
  ADD_FAILURE() << "no job " << id;
  return r.jobs.front();
}

// 32 GPUs: 2 leaves x 2 nodes x 8 GPUs.
Cluster Mini() { return testing::MakeCluster(1, 1, 2, 2, 8); }

TEST(Preemption, EvictsTheFewestWholeGangsAndStartsTheHighPriorityGangAtOnce) {
  // t=0: c (two nodes) fills one leaf, a and b (one node each) the other. t=100: h (priority
  // 10) needs a whole leaf. Either leaf makes room; one victim (c) beats two (a, b).
  // With preemption h runs 100..200; c loses its 100 s of work (less than the 600 s since a
  // checkpoint), is requeued and runs 200..1200. Without, h waits for a and b: 1000..1100.
  const Trace t = Parse(
      "c,0,2,8,1000,0,leaf,0,\n"
      "a,0,1,8,1000,0,,0,\n"
      "b,0,1,8,1000,0,,0,\n"
      "h,100,2,8,100,0,leaf,10,\n");
  auto with = Simulate(Mini(), t, "topogang+preempt", Exact());
  auto without = Simulate(Mini(), t, "topogang", Exact());
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(with->policy, "topogang+preempt");
  EXPECT_DOUBLE_EQ(Find(*with, "h").start, 100);
  EXPECT_DOUBLE_EQ(Find(*with, "h").end, 200);
  EXPECT_EQ(Find(*with, "c").preemptions, 1);
  EXPECT_EQ(Find(*with, "a").preemptions, 0);
  EXPECT_EQ(Find(*with, "b").preemptions, 0);
  EXPECT_DOUBLE_EQ(Find(*with, "c").start, 200);
  EXPECT_DOUBLE_EQ(Find(*with, "c").end, 1200);
  EXPECT_DOUBLE_EQ(Find(*with, "a").end, 1000);
  EXPECT_EQ(with->summary.preemptions, 1);
  EXPECT_NEAR(with->summary.lost_gpu_hours, 100.0 * 16 / 3600, 1e-9);
  EXPECT_DOUBLE_EQ(Find(*without, "h").start, 1000);
  EXPECT_EQ(without->summary.preemptions, 0);
  EXPECT_THAT(PriorityTable(t, {*without, *with}), HasSubstr("topogang+preempt"));
}

TEST(Preemption, NeverEvictsEqualOrHigherPriorityNorForAGangThatCannotFit) {
  // h (priority 10) arrives into a cluster of priority-10 and -20 gangs: no victims. g
  // (priority 30) needs 40 GPUs, more than the cluster: left out, nothing evicted for it.
  const Trace t = Parse(
      "a,0,2,8,1000,0,leaf,10,\n"
      "b,0,2,8,1000,0,leaf,20,\n"
      "h,100,2,8,100,0,leaf,10,\n"
      "g,100,5,8,100,0,,30,\n");
  auto r = Simulate(Mini(), t, "topogang+preempt", Exact());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->summary.preemptions, 0);
  EXPECT_DOUBLE_EQ(Find(*r, "h").start, 1000);
  EXPECT_TRUE(Find(*r, "g").unschedulable);
}

TEST(Elastic, StartsAtItsMinimumAndGrowsInsideItsLeaf) {
  // a, b, c take three of the four nodes until 500. e (2 members, at least 1) starts at 10 on
  // the free node with 1 member, at half speed: 490 s x 1/2 = 245 s of its 1000 s of work.
  // At 500 it grows to 2 (the free node next to it), pauses 60 s to resize, and runs the
  // remaining 755 s at full speed: ends at 1315. Rigid, it waits until 500 and ends at 1500.
  const Trace t = Parse(
      "a,0,1,8,500,0,,0,\n"
      "b,0,1,8,500,0,,0,\n"
      "c,0,1,8,500,0,,0,\n"
      "e,10,2,8,1000,0,,0,1\n");
  SimOptions o = Exact();
  o.elastic_resize_s = 60;
  auto with = Simulate(Mini(), t, "topogang+elastic", o);
  auto without = Simulate(Mini(), t, "topogang", o);
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_TRUE(without.ok()) << without.status();
  const JobResult& e = Find(*with, "e");
  EXPECT_DOUBLE_EQ(e.start, 10);
  EXPECT_EQ(e.first_members, 1);
  EXPECT_EQ(e.peak_members, 2);
  EXPECT_EQ(e.growths, 1);
  EXPECT_DOUBLE_EQ(e.end, 1315);
  EXPECT_EQ(e.level, Mini().LevelByName("leaf")) << "one leaf";
  EXPECT_DOUBLE_EQ(Find(*without, "e").start, 500);
  EXPECT_DOUBLE_EQ(Find(*without, "e").end, 1500);
  EXPECT_EQ(Find(*without, "e").first_members, 2);
  EXPECT_THAT(ElasticTable(t, {*without, *with}), HasSubstr("50% / 100%"));
}

TEST(Elastic, NeverGrowsAcrossItsStartLeaf) {
  // e (max 4, min 1) alone on an empty cluster starts in one leaf (its minimum fits a node,
  // and it grows at most inside that node's leaf) with the 2 members the leaf has room for,
  // no resize, and never grows to the other leaf's nodes: 1000 s of work at half speed.
  const Trace t = Parse("e,0,4,8,1000,0,,0,1\n");
  auto r = Simulate(Mini(), t, "topogang+elastic", Exact());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Find(*r, "e").first_members, 2);
  EXPECT_EQ(Find(*r, "e").peak_members, 2);
  EXPECT_EQ(Find(*r, "e").growths, 0);
  EXPECT_DOUBLE_EQ(Find(*r, "e").end, 2000);
  EXPECT_EQ(Find(*r, "e").level, Mini().LevelByName("leaf")) << "one leaf";
}

// 64 GPUs: 2 leaves x 4 nodes x 8 GPUs.
Cluster TwoLeavesOfFour() { return testing::MakeCluster(1, 1, 2, 4, 8); }

TEST(Spares, AFailedMemberIsReplacedBySpareInItsLeafAtOnce) {
  // The policy alone: g (3 members, one leaf) runs; with one spare per leaf (the last node of
  // each) the failure of one of its nodes moves that member to the spare of the same leaf.
  const Cluster c = TwoLeavesOfFour();
  const Trace t = Parse("g,0,3,8,1000,0,leaf,0,\n");
  auto jobs = MakeSimJobs(c, t, Exact());
  ASSERT_TRUE(jobs.ok());
  PolicyContext ctx;
  ctx.jobs = &*jobs;
  ctx.run_time = [](int, const std::vector<MemberPlacement>&) { return 1000.0; };
  ctx.spares_per_domain = 1;
  auto policy = MakePolicy("topogang", c, ctx);
  ASSERT_TRUE(policy.ok()) << policy.status();
  Policy& p = **policy;
  EXPECT_EQ(p.SpareIdleGpus(), 16);
  p.Enqueue(0, 0);
  std::vector<Started> s = p.Schedule(0);
  ASSERT_EQ(s.size(), 1u);
  const int leaf = c.LevelByName("leaf");
  const int home = c.AncestorAt(c.NodeDomain(s[0].members[0].node), leaf);
  for (const MemberPlacement& m : s[0].members) {
    EXPECT_NE(c.node(m.node).name, c.node(c.domain(home).node_end - 1).name) << "not a spare";
  }
  const int failed = s[0].members[1].node;
  HealthResult h = p.SetNodeDown(failed, true, true, 100);
  EXPECT_TRUE(h.killed.empty());
  ASSERT_EQ(h.moved.size(), 1u);
  int on_spare = 0;
  for (const MemberPlacement& m : h.moved[0].second) {
    EXPECT_NE(m.node, failed);
    EXPECT_EQ(c.AncestorAt(c.NodeDomain(m.node), leaf), home) << c.node(m.node).name;
    on_spare += m.node == c.domain(home).node_end - 1;
  }
  EXPECT_EQ(on_spare, 1);
  EXPECT_EQ(p.SpareIdleGpus(), 8) << "the other leaf's spare";
}

TEST(Spares, RecoveryIsImmediateWithSparesAndWaitsForRepairWithout) {
  // g (3 nodes, one leaf) and f (3 nodes, the other) run; x and y (a node each) take the
  // remaining nodes when there are no spares, and wait (behind spares) when there are. At 100
  // a node of g fails for 200 s. With spares g moves to its leaf's spare at once: it loses
  // 100 s of work and ends at 1100, recovery 0. Without, no node is free in its leaf: it is
  // requeued and runs again when the node is back at 300, ending at 1300.
  const Trace t = Parse(
      "g,0,3,8,1000,0,leaf,0,\n"
      "f,0,3,8,5000,0,leaf,0,\n"
      "x,1,1,8,5000,0,,0,\n"
      "y,1,1,8,5000,0,,0,\n");
  const Cluster c = TwoLeavesOfFour();
  Trace failing = t;
  NodeEvent e;
  e.time_s = 100;
  e.node = c.node(0).name;  // g is placed first, in the first leaf
  e.duration_s = 200;
  failing.events.push_back(e);
  auto with = Simulate(c, failing, "topogang+spares", Exact());
  auto without = Simulate(c, failing, "topogang", Exact());
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(with->summary.recoveries, 1);
  EXPECT_DOUBLE_EQ(with->summary.max_recovery, 0);
  EXPECT_EQ(Find(*with, "g").restarts, 0);
  EXPECT_DOUBLE_EQ(Find(*with, "g").end, 1100);
  EXPECT_GT(Find(*with, "x").start, 1000) << "spares take no ordinary work";
  EXPECT_EQ(without->summary.recoveries, 1);
  EXPECT_DOUBLE_EQ(without->summary.max_recovery, 200);
  EXPECT_EQ(Find(*without, "g").restarts, 1);
  EXPECT_DOUBLE_EQ(Find(*without, "g").end, 1300);
  EXPECT_DOUBLE_EQ(Find(*without, "x").start, 1);
  EXPECT_THAT(RecoveryTable({*without, *with}), HasSubstr("topogang+spares"));
}

// 128 GPUs: 2 leaves x 8 nodes x 8 GPUs; node 0 (first leaf) slow from the start.
Cluster TwoLeavesOfEight() { return testing::MakeCluster(1, 1, 2, 8, 8); }

Trace WithSlowNode(Trace t, const Cluster& c, double at, double duration) {
  NodeEvent e;
  e.kind = NodeEvent::Kind::kSlow;
  e.time_s = at;
  e.node = c.node(0).name;
  e.duration_s = duration;
  t.events.push_back(e);
  return t;
}

TEST(SlowNodes, LargeGangsAvoidThemSmallJobsStillUseThem) {
  // L (64 GPUs, one leaf) arrives first and lands in the first leaf, on the slow node: 1.5x
  // slower, ends at 1500. Avoiding slow nodes it takes the second leaf and ends at 1000; the
  // eight 1-node jobs then fill the first leaf, one of them on the slow node.
  const Cluster c = TwoLeavesOfEight();
  std::string body = "L,0,8,8,1000,0,leaf,0,\n";
  for (int i = 0; i < 8; ++i) absl::StrAppend(&body, "s", i, ",1,1,8,100,0,,0,\n");
  const Trace t = WithSlowNode(Parse(body), c, 0, 0);
  auto plain = Simulate(c, t, "topogang", Exact());
  auto avoid = Simulate(c, t, "topogang+avoid-slow", Exact());
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(avoid.ok()) << avoid.status();
  auto small_slowed = [](const PolicyResult& r) {
    int n = 0;
    for (const JobResult& j : r.jobs) n += j.id != "L" && j.slowed;
    return n;
  };
  EXPECT_TRUE(Find(*plain, "L").slowed);
  EXPECT_DOUBLE_EQ(Find(*plain, "L").end, 1500);
  EXPECT_EQ(small_slowed(*plain), 0);
  EXPECT_FALSE(Find(*avoid, "L").slowed);
  EXPECT_DOUBLE_EQ(Find(*avoid, "L").end, 1000);
  EXPECT_EQ(small_slowed(*avoid), 1);
  EXPECT_THAT(SlowNodeTable(t, {*plain, *avoid}), HasSubstr("1 of 1"));
}

TEST(SlowNodes, ARunningJobSlowsWhileItsNodeIsSlow) {
  // L runs from 0 on the first leaf; its node 0 is slow from 500 to 700: 200 s at 1/1.5 speed
  // do 133.3 s of work, so the remaining 366.7 s end at 1066.7.
  const Cluster c = TwoLeavesOfEight();
  const Trace t = WithSlowNode(Parse("L,0,8,8,1000,0,leaf,0,\n"), c, 500, 200);
  auto r = Simulate(c, t, "topogang", Exact());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(Find(*r, "L").end, 700 + (1000 - 500 - 200 / 1.5), 1e-6);
}

TEST(PolicyFeatures, NamesSwitchFeaturesOnForTopogangOnly) {
  SimOptions o;
  auto base = ApplyPolicyFeatures("topogang+preempt+spares", &o);
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(*base, "topogang");
  EXPECT_TRUE(o.preemption);
  EXPECT_TRUE(o.spares);
  EXPECT_FALSE(o.elastic);
  SimOptions p;
  EXPECT_FALSE(ApplyPolicyFeatures("slurm-tree+preempt", &p).ok());
  EXPECT_FALSE(ApplyPolicyFeatures("topogang+fast", &p).ok());
  SimOptions q;
  EXPECT_EQ(*ApplyPolicyFeatures("volcano-hypernode", &q), "volcano-hypernode");
}

TEST(Features, SameInputsSameResults) {
  GeneratorOptions g;
  g.jobs = 300;
  g.cluster_gpus = 64;
  g.seed = 4;
  g.profile = "llm";
  g.max_job_gpus = 32;
  g.failures_per_node_day = 0.5;
  const Cluster c = TwoLeavesOfFour();
  for (int n = 0; n < c.num_nodes(); ++n) g.node_names.push_back(c.node(n).name);
  auto trace = GenerateTrace(g);
  ASSERT_TRUE(trace.ok()) << trace.status();
  TraceFeatureOptions f;
  f.seed = 4;
  f.high_priority_share = 0.5;
  f.high_priority_min_gpus = 16;
  f.elastic_share = 0.5;
  Trace again = *trace;
  AddTraceFeatures(f, &*trace);
  AddTraceFeatures(f, &again);
  EXPECT_EQ(WriteTraceCsv(*trace), WriteTraceCsv(again));
  int high = 0, elastic = 0;
  for (const TraceJob& j : trace->jobs) {
    high += j.priority == f.high_priority;
    elastic += j.elastic();
    if (j.priority == f.high_priority) {
      EXPECT_GE(j.total_gpus(), 16);
    }
  }
  EXPECT_GT(high, 0);
  EXPECT_GT(elastic, 0);
  auto a = Simulate(c, *trace, "topogang+preempt+elastic+spares", SimOptions{});
  auto b = Simulate(c, *trace, "topogang+preempt+elastic+spares", SimOptions{});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_GT(a->summary.preemptions + a->summary.growths, 0) << "the features did something";
  ASSERT_EQ(a->jobs.size(), b->jobs.size());
  for (size_t i = 0; i < a->jobs.size(); ++i) {
    EXPECT_EQ(a->jobs[i].start, b->jobs[i].start) << a->jobs[i].id;
    EXPECT_EQ(a->jobs[i].end, b->jobs[i].end) << a->jobs[i].id;
    EXPECT_EQ(a->jobs[i].preemptions, b->jobs[i].preemptions) << a->jobs[i].id;
    EXPECT_EQ(a->jobs[i].growths, b->jobs[i].growths) << a->jobs[i].id;
  }
  EXPECT_EQ(a->summary.mean_recovery, b->summary.mean_recovery);
  EXPECT_EQ(a->summary.completed, a->summary.jobs) << "everything finishes";
}

}  // namespace
}  // namespace topogang::sim
