// The best-practice baselines (`*-best`): each scheduler fed as its users are told to run it
// (sim/kueue_tas_policy.cc, sim/slurm_tree_policy.cc, sim/volcano_policy.cc), side by side with
// the same scheduler fed the trace as annotated.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/network_model.h"
#include "sim/policy.h"
#include "tests/test_util.h"

namespace topogang::sim {
namespace {

// 1 zone x 2 spines x 2 leaves x 4 nodes x 8 GPUs; node n is in leaf n / 4.
class BestPractice : public ::testing::Test {
 protected:
  BestPractice() : c_(testing::MakeCluster(1, 2, 2, 4, 8)) {}

  // Marks `gpus` more GPUs of node n used (its first free ones).
  void FillNode(int n, int gpus) {
    std::vector<int> g;
    for (int i = 0; i < c_.node(n).gpus && static_cast<int>(g.size()) < gpus; ++i) {
      if (c_.IsFree(c_.node(n).gpu_begin + i)) g.push_back(c_.node(n).gpu_begin + i);
    }
    ASSERT_TRUE(c_.Allocate(g).ok());
  }

  int AddJob(int members, int gpus, std::string required = "", std::string preferred = "",
             double estimate_s = 0) {
    auto t = std::make_unique<TraceJob>();
    t->id = absl::StrCat("j", traces_.size());
    t->members = members;
    t->gpus_per_member = gpus;
    t->duration_s = 100;
    SimJob j;
    j.trace = t.get();
    j.gang.name = t->id;
    j.gang.members = members;
    j.gang.gpus_per_member = gpus;
    j.gang.required_tier = std::move(required);
    j.gang.preferred_tier = std::move(preferred);
    j.gang.runtime_estimate = j.gang.runtime_limit = absl::Seconds(estimate_s);
    traces_.push_back(std::move(t));
    jobs_.push_back(std::move(j));
    return static_cast<int>(jobs_.size()) - 1;
  }

  // Every job really runs `run_s`. `tier_wait_s`: PolicyContext::required_tier_max_wait_s.
  std::unique_ptr<Policy> Make(const std::string& name, double run_s = 100,
                               double tier_wait_s = -1) {
    PolicyContext ctx;
    ctx.jobs = &jobs_;
    ctx.required_tier_max_wait_s = tier_wait_s;
    ctx.run_time = [run_s](int, const std::vector<MemberPlacement>&) { return run_s; };
    auto p = MakePolicy(name, c_, ctx);
    EXPECT_TRUE(p.ok()) << p.status();
    return *std::move(p);
  }

  static std::map<int, int> NodesOf(const std::vector<Started>& s, int j) {
    std::map<int, int> out;
    for (const Started& st : s) {
      if (st.job != j) continue;
      for (const MemberPlacement& m : st.members) ++out[m.node];
    }
    return out;
  }
  static bool Started_(const std::vector<Started>& s, int j) { return !NodesOf(s, j).empty(); }

  Cluster c_;
  std::vector<std::unique_ptr<TraceJob>> traces_;
  std::vector<SimJob> jobs_;
};

TEST_F(BestPractice, KueueMostCompactKeepsASubNodeGangOnOneNode) {
  // Every node has 2 GPUs free except node 5 with 8. A 4 x 1 gang preferring a leaf: Kueue as
  // annotated takes the BestFit leaf (leaf 0, 8 pods of room) and spreads the pods over its
  // nodes; with podset-preferred-topology: hostname it takes node 5.
  for (int n = 0; n < 16; ++n) {
    if (n != 5) FillNode(n, 6);
  }
  int j = AddJob(4, 1, "", "leaf");
  auto as_is = Make("kueue-tas");
  as_is->Enqueue(j, 0);
  EXPECT_GT(NodesOf(as_is->Schedule(0), j).size(), 1u);
  auto best = Make("kueue-tas-best");
  best->Enqueue(j, 0);
  EXPECT_EQ(NodesOf(best->Schedule(0), j).size(), 1u);
}

TEST_F(BestPractice, KueueReplacesOneFailedNodeAndEvictsOnASecond) {
  int j = AddJob(2, 8, "", "leaf");
  auto p = Make("kueue-tas-best");
  p->Enqueue(j, 0);
  std::map<int, int> nodes = NodesOf(p->Schedule(0), j);
  ASSERT_EQ(nodes.size(), 2u);
  const int first = nodes.begin()->first, second = nodes.rbegin()->first;
  HealthResult r = p->SetNodeDown(first, true, true, 50);
  ASSERT_EQ(r.moved.size(), 1u) << "TASFailedNodeReplacement: one node is replaced";
  EXPECT_TRUE(r.killed.empty());
  for (const MemberPlacement& m : r.moved[0].second) EXPECT_NE(m.node, first);
  EXPECT_EQ(r.moved[0].second.size(), 2u);
  // The replacement stays in the survivor's leaf (it has room).
  for (const MemberPlacement& m : r.moved[0].second) EXPECT_EQ(m.node / 4, second / 4);
  // A second node of the same workload failing at the same time: evicted and requeued.
  HealthResult r2 = p->SetNodeDown(second, true, true, 50);
  EXPECT_EQ(r2.killed, std::vector<int>{j});
  // As annotated, Kueue evicts at once.
  auto as_is = Make("kueue-tas");
  int k = AddJob(2, 8, "", "leaf");
  as_is->Enqueue(k, 0);
  nodes = NodesOf(as_is->Schedule(0), k);
  EXPECT_EQ(as_is->SetNodeDown(nodes.begin()->first, true, true, 50).killed, std::vector<int>{k});
}

TEST_F(BestPractice, SlurmRunsSubNodeGangsWithN1AndWholeNodesWithNtasksPerNode) {
  for (int n = 0; n < 16; ++n) FillNode(n, 4);  // every node half free
  FillNode(7, 4);                               // ... but node 7, now full
  // -N1: 4 tasks of 1 GPU all on one node (the tree plugin alone spreads them as it fills).
  int sub = AddJob(4, 1);
  auto best = Make("slurm-tree-best");
  best->Enqueue(sub, 0);
  EXPECT_EQ(NodesOf(best->Schedule(0), sub).size(), 1u);
  // --ntasks-per-node=2 for 4-GPU tasks: only whole free nodes; there are none, so it waits,
  // where the annotated run packs the tasks into half-free nodes.
  int wide = AddJob(4, 4);
  best->Enqueue(wide, 0);
  EXPECT_FALSE(Started_(best->Schedule(0), wide));
  auto as_is = Make("slurm-tree");
  as_is->Enqueue(wide, 0);
  EXPECT_EQ(NodesOf(as_is->Schedule(0), wide).size(), 4u);
}

TEST_F(BestPractice, SlurmGivesUpASwitchRequirementAfterMaxSwitchWait) {
  for (int n : {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15}) FillNode(n, 8);  // one free node a leaf
  int j = AddJob(2, 8, "leaf");
  auto best = Make("slurm-tree-best");
  best->Enqueue(j, 0);
  EXPECT_FALSE(Started_(best->Schedule(0), j));
  EXPECT_FALSE(Started_(best->Schedule(299), j));
  // max_switch_wait (300 s): placed over two leaves. Backfill passes come every bf_interval.
  std::vector<Started> s = best->Schedule(330);
  EXPECT_EQ(NodesOf(s, j).size(), 2u);
  auto as_is = Make("slurm-tree");
  as_is->Enqueue(j, 0);
  EXPECT_FALSE(Started_(as_is->Schedule(1e6), j)) << "as annotated it waits forever";
}

TEST_F(BestPractice, TopogangGivenTheSameMaxWaitGivesTheSwitchRequirementUpToo) {
  // The case above under `--required-tier-max-wait 300` (GangSpec::required_tier_max_wait):
  // topogang wakes at the lapse itself, with no backfill interval, and keeps no patience.
  for (int n : {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15}) FillNode(n, 8);
  int j = AddJob(2, 8, "leaf");
  auto tg = Make("topogang", 100, /*tier_wait_s=*/300);
  tg->Enqueue(j, 0);
  EXPECT_FALSE(Started_(tg->Schedule(0), j));
  EXPECT_DOUBLE_EQ(tg->NextWakeup(), 300);
  EXPECT_FALSE(Started_(tg->Schedule(299), j));
  EXPECT_EQ(NodesOf(tg->Schedule(300), j).size(), 2u);
  auto strict = Make("topogang");
  strict->Enqueue(j, 0);
  EXPECT_FALSE(Started_(strict->Schedule(1e6), j)) << "by default the requirement stands";
}

TEST_F(BestPractice, AnNvlinkRequirementNeverLapsesInEither) {
  // GB200 trays, NVLink domains of two nodes: one free node in each, and a gang of two nodes
  // that must share a domain. Slurm's --segment is never given up; neither is it here.
  c_ = testing::MakeCluster(1, 1, 2, 4, 8, "[GB200]", 2);
  int nvl = -1;
  for (int l = 0; l <= c_.node_level(); ++l) {
    if (IsNvlinkLevel(c_, l)) nvl = l;
  }
  ASSERT_GT(nvl, 0);
  for (int n = 0; n < 8; n += 2) FillNode(n, 8);
  int j = AddJob(2, 8, c_.LevelName(nvl));
  for (const char* name : {"topogang", "slurm-tree-best"}) {
    auto p = Make(name, 100, 300);  // the wait is topogang's; Slurm's is its own
    p->Enqueue(j, 0);
    EXPECT_FALSE(Started_(p->Schedule(1e6), j)) << p->name();
  }
}

TEST_F(BestPractice, SlurmBackfillPlansWithTimeLimitsAndPassesEveryInterval) {
  // Half the cluster busy with a job limited to 1000 s; the head needs the whole cluster.
  for (int n = 0; n < 8; ++n) FillNode(n, 8);
  int head = AddJob(16, 8);
  int short_est = AddJob(1, 8, "", "", 50);  // ends before the head's reservation... by its limit
  int no_est = AddJob(1, 8);                 // no limit: the partition's 7-day MaxTime
  auto best = Make("slurm-tree-best", /*run_s=*/10);
  best->Enqueue(head, 0);
  best->Enqueue(short_est, 0);
  best->Enqueue(no_est, 0);
  // The head's shadow is "never" (the busy half holds no job the policy knows of), so nothing is
  // reserved and the first pass backfills both.
  std::vector<Started> s = best->Schedule(0);
  EXPECT_TRUE(Started_(s, short_est));
  EXPECT_TRUE(Started_(s, no_est));
  // Between passes only the head is tried: a new job arriving at 10 s waits for the pass at 30.
  int later = AddJob(1, 8, "", "", 50);
  best->Enqueue(later, 10);
  EXPECT_FALSE(Started_(best->Schedule(10), later));
  EXPECT_DOUBLE_EQ(best->NextWakeup(), 30);
  EXPECT_TRUE(Started_(best->Schedule(30), later));
}

TEST_F(BestPractice, SlurmTimeLimitsKeepLongJobsOutOfTheHeadsReservation) {
  // 8 nodes run jobs the policy started: the head needs all 16 nodes, so its shadow is when they
  // end. By time limit (7 days without one) a job ending before the shadow may backfill; a job
  // with a 50 s limit may, one with no limit may not.
  std::vector<int> fillers;
  auto best = Make("slurm-tree-best", /*run_s=*/100);
  for (int i = 0; i < 8; ++i) {
    fillers.push_back(AddJob(1, 8, "", "", 200));
    best->Enqueue(fillers.back(), 0);
  }
  ASSERT_EQ(best->Schedule(0).size(), 8u);
  int head = AddJob(16, 8), quick = AddJob(1, 8, "", "", 150), open = AddJob(1, 8);
  best->Enqueue(head, 1);
  best->Enqueue(quick, 1);
  best->Enqueue(open, 1);
  std::vector<Started> s = best->Schedule(30);
  EXPECT_FALSE(Started_(s, head));
  EXPECT_TRUE(Started_(s, quick)) << "ends (by its limit) before the fillers' limits run out";
  EXPECT_FALSE(Started_(s, open)) << "7-day limit: would delay the head";
}

TEST_F(BestPractice, VolcanoBinpacksTasksOntoTheFullestNode) {
  for (int n = 0; n < 16; ++n) {
    if (n != 5) FillNode(n, n == 2 ? 6 : 4);  // node 2: 2 free, node 5: 8 free, others 4
  }
  int j = AddJob(2, 1, "", "leaf");  // soft mode: node order decides
  auto best = Make("volcano-hypernode-best");
  best->Enqueue(j, 0);
  EXPECT_EQ(NodesOf(best->Schedule(0), j), (std::map<int, int>{{2, 2}}));
  auto as_is = Make("volcano-hypernode");
  as_is->Enqueue(j, 0);
  EXPECT_EQ(NodesOf(as_is->Schedule(0), j), (std::map<int, int>{{5, 2}}));  // least requested
}

TEST_F(BestPractice, NoPolicyMixesGpuModels) {
  c_ = testing::MakeCluster(1, 1, 2, 2, 8, "[H100, A100]");
  std::map<std::string, int> sku_of_node;
  for (const std::string& name : PolicyNames()) {
    int k = AddJob(2, 8);  // both nodes of model 1
    jobs_[k].gang.sku = c_.SkuName(1);
    int j = AddJob(3, 8);  // 3 nodes of one model do not exist (2 of each)
    auto p = Make(name);
    p->Enqueue(k, 0);
    p->Enqueue(j, 0);
    std::vector<Started> s = p->Schedule(0);
    for (const Started& st : s) {
      std::set<int> skus;
      for (const MemberPlacement& m : st.members) skus.insert(c_.node(m.node).sku);
      if (name != "default") {
        EXPECT_EQ(skus.size(), 1u) << name;
      }
      if (st.job == k) {
        EXPECT_EQ(*skus.begin(), 1) << name;
      }
    }
    EXPECT_FALSE(Started_(s, j) && name != "default")
        << name << ": 3 nodes of one model do not exist";
    EXPECT_TRUE(Started_(s, k)) << name;
  }
}

}  // namespace
}  // namespace topogang::sim
