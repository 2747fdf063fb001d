// Each baseline reproduces the behaviour its documentation describes, on small hand-made
// clusters whose free capacity is shaped by hand.
#include <gtest/gtest.h>

#include <set>

#include "sim/policy.h"
#include "tests/test_util.h"

namespace topogang::sim {
namespace {

// 1 zone x 2 spines x 2 leaves x 4 nodes x 8 GPUs. Leaves L0, L1 under spine 0; L2, L3 under
// spine 1; node n is in leaf n / 4.
class Baselines : public ::testing::Test {
 protected:
  Baselines() : c_(testing::MakeCluster(1, 2, 2, 4, 8)) {}

  // Leaves keep free nodes: L0 4, L1 2, L2 3, L3 1.
  void ShapeFree() {
    for (int n : {4, 5, 8, 12, 13, 14}) FillNode(n, 8);
  }
  void FillNode(int n, int gpus) {
    std::vector<int> g;
    for (int i = 0; i < gpus; ++i) g.push_back(c_.node(n).gpu_begin + i);
    ASSERT_TRUE(c_.Allocate(g).ok());
  }

  // Adds a job; returns its index.
  int AddJob(int members, int gpus, std::string required = "", std::string preferred = "") {
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
    traces_.push_back(std::move(t));
    jobs_.push_back(std::move(j));
    return static_cast<int>(jobs_.size()) - 1;
  }

  std::unique_ptr<Policy> Make(const std::string& name, uint64_t seed = 1) {
    PolicyContext ctx;
    ctx.jobs = &jobs_;
    ctx.seed = seed;
    ctx.run_time = [](int, const std::vector<MemberPlacement>&) { return 100.0; };
    auto p = MakePolicy(name, c_, ctx);
    EXPECT_TRUE(p.ok()) << p.status();
    return *std::move(p);
  }

  // Members of job `j` per node, for the started job (empty if not started).
  static std::map<int, int> NodesOf(const std::vector<Started>& s, int j) {
    std::map<int, int> out;
    for (const Started& st : s) {
      if (st.job != j) continue;
      for (const MemberPlacement& m : st.members) ++out[m.node];
    }
    return out;
  }
  static std::map<int, int> Leaves(const std::map<int, int>& nodes) {
    std::map<int, int> out;
    for (auto [n, k] : nodes) out[n / 4] += k;
    return out;
  }

  Cluster c_;
  std::vector<std::unique_ptr<TraceJob>> traces_;
  std::vector<SimJob> jobs_;
};

TEST_F(Baselines, SlurmPicksTheTightestLeafThatFits) {
  ShapeFree();
  int two = AddJob(2, 8), three = AddJob(3, 8);
  auto p = Make("slurm-tree");
  p->Enqueue(two, 0);
  p->Enqueue(three, 0);
  auto s = p->Schedule(0);
  EXPECT_EQ(Leaves(NodesOf(s, two)), (std::map<int, int>{{1, 2}}));    // L1: exactly 2 free
  EXPECT_EQ(Leaves(NodesOf(s, three)), (std::map<int, int>{{2, 3}}));  // L2: exactly 3 free
}

TEST_F(Baselines, SlurmSpillsFromTheFullestLeafOfTheSpineThatFitsToItsNeighbour) {
  ShapeFree();
  int five = AddJob(5, 8);
  auto p = Make("slurm-tree");
  p->Enqueue(five, 0);
  // No leaf holds 5; spine 0 does (4+2), spine 1 does not (3+1): its biggest leaf L0 first,
  // then the closest leaf that holds the rest (L1, same spine) rather than L2/L3.
  EXPECT_EQ(Leaves(NodesOf(p->Schedule(0), five)), (std::map<int, int>{{0, 4}, {1, 1}}));
}

TEST_F(Baselines, KueueBestFitTakesTheLeastRoomyDomainThatFitsThenClimbs) {
  ShapeFree();
  int three = AddJob(3, 8, "", "leaf"), five = AddJob(5, 8, "", "leaf");
  auto p = Make("kueue-tas");
  p->Enqueue(three, 0);
  p->Enqueue(five, 0);
  auto s = p->Schedule(0);
  EXPECT_EQ(Leaves(NodesOf(s, three)), (std::map<int, int>{{2, 3}}));
  // After that: L0 4, L1 2, L2 0, L3 1 -> preferred leaf fails, climb to spine: spine 0 (6).
  // Descending, leaves sorted by count desc: L0 whole (4), then BestFit for 1 -> L1.
  EXPECT_EQ(Leaves(NodesOf(s, five)), (std::map<int, int>{{0, 4}, {1, 1}}));
}

TEST_F(Baselines, KueueRequiredLevelNeverSpills) {
  ShapeFree();
  int five = AddJob(5, 8, "leaf");
  auto p = Make("kueue-tas");
  p->Enqueue(five, 0);
  EXPECT_TRUE(p->Schedule(0).empty());
  EXPECT_EQ(p->cluster().FreeHealthy(0), c_.FreeHealthy(0));  // nothing taken
}

TEST_F(Baselines, KueueKepExampleBestFitVersusLeastFreeCapacity) {
  // KEP 2724: nodes with room for 3, 3, 2, 1 pods and a 7-pod workload: BestFit takes 3, 3, 1;
  // LeastFreeCapacity (unconstrained) takes 1, 2, 3 and 1 of the other 3.
  for (int n = 4; n < 16; ++n) FillNode(n, 8);
  FillNode(0, 5);
  FillNode(1, 5);
  FillNode(2, 6);
  FillNode(3, 7);
  int bf = AddJob(7, 1, "", "leaf"), lfc = AddJob(7, 1);
  {
    auto p = Make("kueue-tas");
    p->Enqueue(bf, 0);
    EXPECT_EQ(NodesOf(p->Schedule(0), bf), (std::map<int, int>{{0, 3}, {1, 3}, {3, 1}}));
  }
  {
    auto p = Make("kueue-tas");
    p->Enqueue(lfc, 0);
    EXPECT_EQ(NodesOf(p->Schedule(0), lfc), (std::map<int, int>{{0, 3}, {1, 1}, {2, 2}, {3, 1}}));
  }
}

TEST_F(Baselines, VolcanoClimbsTiersAndBinpacksWithinATier) {
  ShapeFree();
  int two = AddJob(2, 8, "spine"), five = AddJob(5, 8, "spine");
  auto p = Make("volcano-hypernode");
  p->Enqueue(two, 0);
  auto s = p->Schedule(0);
  // Tier 1 (leaves) first; among L0 (4 free), L1 (2), L2 (3) the binpack score
  // (used + requested) / allocatable is highest for L1: (2 + 2) / 4.
  EXPECT_EQ(Leaves(NodesOf(s, two)), (std::map<int, int>{{1, 2}}));
  // Now spine 0 has 4 free nodes and spine 1 has 4: a required-spine gang of 5 fits no
  // hypernode of tier 1 or 2 and waits whole.
  p->Enqueue(five, 0);
  EXPECT_TRUE(p->Schedule(0).empty());
  int four = AddJob(4, 8, "spine");
  p->Enqueue(four, 0);
  // 4 fits L0 exactly at tier 1 (score 1.0) before any spine is considered.
  EXPECT_EQ(Leaves(NodesOf(p->Schedule(0), four)), (std::map<int, int>{{0, 4}}));
}

TEST_F(Baselines, DefaultSpreadsPodsAndHoldsPartialGangs) {
  int spread = AddJob(4, 1);
  auto p = Make("default");
  p->Enqueue(spread, 0);
  auto s = p->Schedule(0);
  // Least-allocated scoring: each pod goes to an emptiest node -> 4 distinct nodes.
  EXPECT_EQ(NodesOf(s, spread).size(), 4u);

  // Leave two whole nodes free: a 3 x 8 gang binds two pods and holds 16 GPUs while waiting.
  Cluster& c = c_;
  c = testing::MakeCluster(1, 2, 2, 4, 8);
  for (int n = 2; n < 16; ++n) FillNode(n, 8);
  int big = AddJob(3, 8);
  auto q = Make("default");
  q->Enqueue(big, 0);
  EXPECT_TRUE(q->Schedule(0).empty());
  EXPECT_EQ(q->HeldIdleGpus(), 16);
  EXPECT_EQ(q->cluster().FreeHealthy(0), 0);
  // The rendezvous timeout gives the pods back (and they are taken again at once).
  const double wake = q->NextWakeup();
  EXPECT_DOUBLE_EQ(wake, 600);
  EXPECT_TRUE(q->Schedule(wake).empty());
  EXPECT_EQ(q->HeldIdleGpus(), 16);
  EXPECT_DOUBLE_EQ(q->NextWakeup(), 1200);
}

TEST_F(Baselines, FirstFitIsAllOrNothingAndIgnoresTopology) {
  int cross = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    int j = AddJob(4, 8);
    auto p = Make("gang-firstfit", seed);
    p->Enqueue(j, 0);
    auto nodes = NodesOf(p->Schedule(0), j);
    ASSERT_EQ(nodes.size(), 4u);
    cross += Leaves(nodes).size() > 1;
  }
  EXPECT_GT(cross, 10);  // 4 nodes fit one leaf, yet most placements span several
  // All or nothing: 17 nodes do not fit 16; nothing is taken.
  int huge = AddJob(17, 8);
  auto p = Make("gang-firstfit");
  p->Enqueue(huge, 0);
  EXPECT_TRUE(p->Schedule(0).empty());
  EXPECT_EQ(p->cluster().FreeHealthy(0), 128);
}

TEST_F(Baselines, TopogangKeepsAGangInOneLeafWhenOneFits) {
  ShapeFree();
  int j = AddJob(3, 8);
  auto p = Make("topogang");
  p->Enqueue(j, 0);
  EXPECT_EQ(Leaves(NodesOf(p->Schedule(0), j)), (std::map<int, int>{{2, 3}}));  // best fit
}

TEST_F(Baselines, EveryGangPolicyHonoursARequiredNode) {
  ShapeFree();
  FillNode(0, 4);  // node 0 keeps 4 free GPUs: the tightest node for 2 x 2
  for (const std::string policy :
       {"gang-firstfit", "kueue-tas", "slurm-tree", "volcano-hypernode", "topogang"}) {
    int j = AddJob(2, 2, "node");
    auto p = Make(policy);
    p->Enqueue(j, 0);
    auto nodes = NodesOf(p->Schedule(0), j);
    if (policy == "gang-firstfit") {
      EXPECT_FALSE(nodes.empty());  // topology-blind: ignores the constraint, still places
      continue;
    }
    ASSERT_EQ(nodes.size(), 1u) << policy;
    if (policy != "volcano-hypernode") {
      EXPECT_EQ(nodes.begin()->first, 0) << policy;  // best fit
    }
  }
}

TEST_F(Baselines, UnknownPolicyIsAnError) {
  PolicyContext ctx;
  ctx.jobs = &jobs_;
  auto p = MakePolicy("bogus", c_, ctx);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("known: default"), std::string::npos);
}

}  // namespace
}  // namespace topogang::sim
