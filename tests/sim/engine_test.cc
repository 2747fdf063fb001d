#include "sim/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

#include "sim/comm_model.h"
#include "sim/generator.h"
#include "sim/policy.h"
#include "sim/report.h"
#include "tests/sim/mini_trace.h"
#include "tests/test_util.h"

namespace topogang::sim {
namespace {

using ::testing::HasSubstr;

using mini::MiniCluster;
using mini::Parse;

const JobResult& Find(const PolicyResult& r, const std::string& id) {
  for (const JobResult& j : r.jobs) {
    if (j.id == id) return j;
  }
  ADD_FAILURE() << "no job " << id;
  return r.jobs.front();
}

TEST(Engine, MetricsOfAHandComputedTrace) {
  // t=0: a (1 node) starts; b (the whole cluster) waits; t=10: c (1 node) backfills.
  // a, c end at 100, 110; b starts at 110 across both leaves, ends at 160.
  Trace t = mini::ThreeJobs();
  SimOptions proxy;  // bandwidths below are the proxy's tier figures
  proxy.comm_model = CommModel::kProxy;
  auto r = Simulate(MiniCluster(), t, "topogang", proxy);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& j = r->jobs;
  EXPECT_DOUBLE_EQ(j[0].start, 0);
  EXPECT_DOUBLE_EQ(j[0].end, 100);
  EXPECT_DOUBLE_EQ(j[1].start, 110);
  EXPECT_DOUBLE_EQ(j[1].end, 160);
  EXPECT_DOUBLE_EQ(j[2].start, 10);
  EXPECT_DOUBLE_EQ(j[2].end, 110);
  const Summary& s = r->summary;
  EXPECT_EQ(s.completed, 3);
  EXPECT_NEAR(s.mean_wait, 110.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.p95_wait, 110);
  EXPECT_NEAR(s.mean_jct, (100.0 + 160 + 100) / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.p95_jct, 160);
  // Window = [0, last arrival = 10]: 8 of 32 GPUs busy.
  EXPECT_DOUBLE_EQ(s.utilization, 0.25);
  EXPECT_DOUBLE_EQ(s.goodput, 0.25);
  EXPECT_DOUBLE_EQ(s.share_one_leaf, 1.0);   // a and c (the jobs that fit a leaf)
  EXPECT_DOUBLE_EQ(s.share_one_spine, 1.0);  // all three
  EXPECT_DOUBLE_EQ(s.mean_bandwidth, 400);   // b, the only multi-member gang
  EXPECT_DOUBLE_EQ(s.makespan, 160);
  EXPECT_DOUBLE_EQ(s.max_wait_256, 0);
  EXPECT_DOUBLE_EQ(s.partial_gpu_hours, 0);
}

TEST(Engine, RunTimeIsStretchedByThePlacementBandwidth) {
  auto t = GenerateTrace([] {
    GeneratorOptions o;
    o.jobs = 400;
    o.cluster_gpus = 256;
    o.seed = 21;
    o.spine_gpus = 128;
    return o;
  }());
  ASSERT_TRUE(t.ok());
  Cluster c = testing::MakeCluster(2, 2, 2, 4, 8, "[H100]", 0,
                                   "topology: {preset: topograph, cluster_oversubscription: 4}\n");
  SimOptions proxy;  // the stretch formula checked below is the proxy's
  proxy.comm_model = CommModel::kProxy;
  for (const std::string policy : {"default", "gang-firstfit", "topogang"}) {
    auto r = Simulate(c, *t, policy, proxy);
    ASSERT_TRUE(r.ok()) << r.status();
    int stretched = 0;
    for (size_t i = 0; i < r->jobs.size(); ++i) {
      const JobResult& j = r->jobs[i];
      ASSERT_GE(j.end, 0) << policy << " " << j.id;
      const TraceJob& tj = t->jobs[i];
      EXPECT_DOUBLE_EQ(j.stretch, Stretch(tj.comm_fraction, j.ideal_bandwidth, j.bandwidth));
      EXPECT_NEAR(j.end - j.start, tj.duration_s * j.stretch, 1e-6 * tj.duration_s);
      stretched += j.stretch > 1;
    }
    if (policy == "gang-firstfit") {
      EXPECT_GT(stretched, 0);
    }
  }
}

TEST(Engine, SameSeedSameResults) {
  auto t = GenerateTrace([] {
    GeneratorOptions o;
    o.jobs = 300;
    o.cluster_gpus = 256;
    o.seed = 5;
    o.load = 1.2;
    return o;
  }());
  ASSERT_TRUE(t.ok());
  Cluster c = testing::MakeCluster(2, 2, 2, 4, 8);
  SimOptions opt;
  opt.failure_rate_per_node_day = 2;
  opt.seed = 17;
  for (const std::string& policy : PolicyNames()) {
    auto a = Simulate(c, *t, policy, opt), b = Simulate(c, *t, policy, opt);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(SummaryCsv({*a}), SummaryCsv({*b})) << policy;
    EXPECT_EQ(JobsCsv(*a, c), JobsCsv(*b, c)) << policy;
    EXPECT_GT(a->summary.restarts + 0, -1);
  }
}

TEST(Engine, TopogangRestartsAGangRatherThanRepairItWithAThinSide) {
  // One spine over three leaves of two 8-GPU nodes, leaf uplinks 2:1. A 4 x 8 gang runs 2 + 2
  // over leaves 0 and 1; the third leaf is free. Node 0 fails at t = 50: the only room for the
  // lost member is leaf 2, which would leave one node in leaf 0 and one in leaf 2, each ring
  // crossing those leaves at 1 x 8 x 50 / 2 = 200 GB/s against the NICs' 400 (a thin side, at
  // the same span as before). So the gang restarts and is re-planned whole: leaves 1 and 2, 2 + 2.
  Trace t = Parse("x,0,4,8,100,0.5,,\n@fail,50,node-placeholder\n");
  Cluster c = testing::MakeCluster(
      1, 1, 3, 2, 8, "[H100]", 0,
      "topology: {preset: topograph, tiers: ["
      "{name: spine, label: network.topology.nvidia.com/spine, bandwidth_gbps: 400, "
      "oversubscription: 2},"
      "{name: leaf, label: network.topology.nvidia.com/leaf, bandwidth_gbps: 400}]}\n");
  t.events[0].node = c.node(0).name;
  auto r = Simulate(c, t, "topogang", SimOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  const JobResult& x = Find(*r, "x");
  EXPECT_EQ(x.restarts, 1);
  EXPECT_DOUBLE_EQ(x.bandwidth, 3200);  // 400 GB/s: NIC-bound again, no thin side
  EXPECT_DOUBLE_EQ(x.stretch, 1);
}

TEST(Engine, TopogangRestartsAGangRatherThanLeaveALoneTrayInAnNvlinkDomain) {
  // NVL72-like, scaled down: one spine over two leaves of two racks (NVLink domains) of four
  // 4-GPU trays: racks 0-3 = trays 0-3, 4-7, 8-11, 12-15. x (8 trays) runs 4 + 4 on racks 0
  // and 1, y fills rack 2, rack 3 is free. Tray 0 fails at t = 50: the only room is rack 3,
  // where a lone replacement tray would carry the ring between racks on its 4 NICs (4 x 50 =
  // 200 GB/s) against the 800 of a rack of 4 trays. So x restarts and is re-planned whole: 4 + 4.
  Trace t = Parse(
      "x,0,8,4,100,0.5,,\n"
      "y,0,4,4,1000,0.5,,\n"
      "@fail,50,node-placeholder\n");
  Cluster c = testing::MakeNvlCluster();
  t.events[0].node = c.node(0).name;
  auto r = Simulate(c, t, "topogang", SimOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  const JobResult& x = Find(*r, "x");
  EXPECT_EQ(x.restarts, 1);
  EXPECT_DOUBLE_EQ(x.stretch, 1);
  EXPECT_EQ(Find(*r, "y").restarts, 0);
}

TEST(Engine, FailuresKillBaselinesAndRepairTopogangInPlace) {
  // Two 2-node gangs in separate leaves; node 0 fails at t=50 for good.
  Trace t = Parse(
      "x,0,2,8,100,0,,leaf\n"
      "y,0,2,8,100,0,,leaf\n"
      "@fail,50,node-placeholder\n");
  Cluster c = testing::MakeCluster(1, 1, 3, 2, 8);  // 3 leaves: one spare for repairs
  t.events[0].node = c.node(0).name;
  SimOptions opt;
  opt.comm_model = CommModel::kProxy;  // bandwidths below are the proxy's tier figures
  opt.restart_cost_s = 20;             // of the 50 s done at the failure, 30 s survive
  auto base = Simulate(c, t, "kueue-tas", opt);
  ASSERT_TRUE(base.ok()) << base.status();
  auto ours = Simulate(c, t, "topogang", opt);
  ASSERT_TRUE(ours.ok()) << ours.status();
  int killed = 0;
  for (const JobResult& j : base->jobs) {
    if (j.restarts) {
      ++killed;
      EXPECT_DOUBLE_EQ(j.start, 50);  // requeued and restarted at once on the spare leaf
      EXPECT_DOUBLE_EQ(j.end, 120);   // with the remaining 70 s of work
    }
  }
  EXPECT_EQ(killed, 1);
  for (const JobResult& j : ours->jobs) {
    EXPECT_EQ(j.restarts, 0);
    EXPECT_DOUBLE_EQ(j.start, 0);  // not requeued: the lost member moved to the spare leaf
  }
  // The repaired gang restarts from its checkpoint too; the other one was not hit.
  std::vector<double> ends = {ours->jobs[0].end, ours->jobs[1].end};
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(ends, (std::vector<double>{100, 120}));
  for (const JobResult& j : ours->jobs) {
    EXPECT_DOUBLE_EQ(j.bandwidth, 400);  // still within one spine
  }
}

TEST(Engine, LargeGangsDoNotStarveUnderTopogang) {
  // A 64-GPU gang (the whole cluster) behind a steady stream of 1-node jobs that keeps 6 of the
  // 8 nodes busy: it never fits unless something holds GPUs for it.
  std::string body = "big,5,8,8,100,0,,\n";
  for (int i = 0; i < 300; ++i) body += absl::StrCat("s", i, ",", i * 10, ",1,8,60,0,,\n");
  Trace t = Parse(body);
  Cluster c = testing::MakeCluster(1, 1, 2, 4, 8);
  auto greedy = Simulate(c, t, "kueue-tas", SimOptions{});
  ASSERT_TRUE(greedy.ok());
  EXPECT_GT(Find(*greedy, "big").start, 2990);  // best-effort FIFO: waits for the stream to end
  auto easy = Simulate(c, t, "topogang-easy", SimOptions{});
  ASSERT_TRUE(easy.ok());
  EXPECT_LT(Find(*easy, "big").start, 100);  // EASY: reserved at the head's shadow
  // GangQueue's defaults hold only for gangs of 256+ GPUs that are nearly ready (or after 48 h);
  // this 64-GPU gang on a 64-GPU cluster gets holds with hold_min_gpus 64, and since the stream
  // keeps the cluster 3/4 busy, with the hold for gangs that backfill blocks.
  SimOptions backfill_blocks;
  backfill_blocks.queue.hold_min_gpus = 64;
  backfill_blocks.queue.hold_when_backfill_blocks = 1;
  auto ours = Simulate(c, t, "topogang", backfill_blocks);
  ASSERT_TRUE(ours.ok());
  // GangQueue: starved after 10 minutes, then holds GPUs as they free up.
  EXPECT_GE(Find(*ours, "big").start, 600);
  EXPECT_LT(Find(*ours, "big").start, 800);
  EXPECT_GT(ours->summary.partial_gpu_hours, 0);  // the hold is reported as idle-held time
}

TEST(Engine, UnknownTierOrNodeIsAnError) {
  Cluster c = MiniCluster();
  auto r = Simulate(c, Parse("a,0,1,8,100,0,rack,\n"), "topogang", SimOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("line 2: job a: unknown tier 'rack'"));
  r = Simulate(c, Parse("a,0,1,8,100,0,,\n@fail,1,nope\n"), "topogang", SimOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("line 3: no node named 'nope'"));
}

TEST(Engine, JobsLargerThanTheClusterAreLeftOut) {
  auto r = Simulate(MiniCluster(), Parse("a,0,5,8,100,0,,\nb,0,1,8,10,0,,\n"), "slurm-tree", {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.unschedulable, 1);
  EXPECT_EQ(r->summary.completed, 1);
}

TEST(Engine, JobsThatNeverFinishCountUntilTheEndOfTheRun) {
  // b requires one leaf; the only leaf with room for it is drained for good at t=0, so b never
  // starts. a runs 0..100. The run ends at the last event (a's end): b counts 100 - 10.
  Trace t = Parse(
      "a,0,1,8,100,0,,\n"
      "b,10,2,8,50,0,leaf,\n"
      "@drain,0,node-placeholder\n");
  Cluster c = testing::MakeCluster(1, 1, 1, 2, 8);  // one leaf of two nodes
  t.events[0].node = c.node(1).name;
  for (const std::string policy : {"kueue-tas", "topogang"}) {
    auto r = Simulate(c, t, policy, SimOptions{});
    ASSERT_TRUE(r.ok()) << r.status();
    const Summary& s = r->summary;
    EXPECT_EQ(s.completed, 1) << policy;
    EXPECT_EQ(s.unfinished, 1) << policy;
    EXPECT_EQ(s.jobs, 2) << policy;
    EXPECT_LT(Find(*r, "b").start, 0) << policy;
    const double end = s.makespan;
    EXPECT_GE(end, 100) << policy;
    EXPECT_NEAR(s.mean_jct, (100.0 + (end - 10)) / 2, 1e-9) << policy;
    EXPECT_DOUBLE_EQ(s.p95_jct, std::max(100.0, end - 10)) << policy;
  }
}

TEST(Engine, SummaryCountsUnfinishedJobsAtTheRunEnd) {
  Cluster c = MiniCluster();
  std::vector<JobResult> jobs(3);
  jobs[0].arrival = 0, jobs[0].start = 0, jobs[0].end = 10, jobs[0].gpus = 8;
  jobs[1].arrival = 5, jobs[1].start = 20, jobs[1].end = -1, jobs[1].gpus = 512;  // running
  jobs[2].arrival = 10, jobs[2].gpus = 512;                                       // never started
  Summary s;
  SummarizeJobs(c, jobs, 100, &s);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.unfinished, 2);
  EXPECT_NEAR(s.mean_jct, (10.0 + 95 + 90) / 3, 1e-9);
  EXPECT_NEAR(s.mean_wait, (0.0 + 15 + 90) / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.max_wait_256, 15);
  EXPECT_EQ(s.never_started_256, 1);
}

TEST(Engine, EstimatesReachThePoliciesAsTold) {
  // The trace gives a an estimate of 400 s and b none; --estimates picks what the gangs carry.
  Trace t = Parse("a,0,1,8,100,0,,\nb,0,1,8,100,0,,\n");
  t.jobs[0].estimate_s = 400;
  Cluster c = MiniCluster();
  for (auto [mode, want_a, want_b] :
       {std::tuple{Estimates::kTrace, 400.0, 0.0}, std::tuple{Estimates::kExact, 100.0, 100.0},
        std::tuple{Estimates::kNone, 0.0, 0.0}}) {
    SimOptions opt;
    opt.estimates = mode;
    auto jobs = MakeSimJobs(c, t, opt);
    ASSERT_TRUE(jobs.ok());
    EXPECT_EQ(absl::ToDoubleSeconds((*jobs)[0].gang.runtime_estimate), want_a);
    EXPECT_EQ(absl::ToDoubleSeconds((*jobs)[1].gang.runtime_estimate), want_b);
    // A trace's estimate is a time limit (never below the run time): it is both.
    EXPECT_EQ((*jobs)[0].gang.runtime_limit, (*jobs)[0].gang.runtime_estimate);
    EXPECT_EQ((*jobs)[1].gang.runtime_limit, (*jobs)[1].gang.runtime_estimate);
  }
}

TEST(Engine, UnknownGpuModelIsAnError) {
  Trace t = Parse("a,0,1,8,100,0,,\n");
  t.jobs[0].sku = "B300";
  auto r = Simulate(MiniCluster(), t, "topogang", SimOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown GPU model 'B300'"), std::string::npos);
}

}  // namespace
}  // namespace topogang::sim
