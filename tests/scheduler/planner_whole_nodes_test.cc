// A multi-node gang of members smaller than a node gets whole nodes where its tier allows:
// a node carrying a single 4-GPU member has half the NICs of the others, and the gang's ring
// runs at its pace (docs/network-model.md), so best fit alone (which would fill the tightest
// leaf's half-free nodes) halves the whole all-reduce.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "scheduler/planner.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

// Marks the first `gpus` GPUs of node `n` used.
void Use(Cluster& c, int n, int gpus) {
  std::vector<int> ids;
  for (int g = 0; g < gpus; ++g) ids.push_back(c.node(n).gpu_begin + g);
  ASSERT_TRUE(c.Allocate(ids).ok());
}

GangSpec Gang(int members, int gpus) {
  GangSpec g;
  g.name = "g";
  g.members = members;
  g.gpus_per_member = gpus;
  return g;
}

// Members per node, in the order the placement lists them.
std::vector<std::pair<int, int>> PerNode(const Placement& p) {
  std::vector<std::pair<int, int>> out;
  for (const MemberPlacement& m : p.members) {
    if (out.empty() || out.back().first != m.node) out.emplace_back(m.node, 0);
    ++out.back().second;
  }
  return out;
}

// Two leaves of three 8-GPU nodes: leaf0 = nodes 0-2 with 4 + 4 + 8 GPUs free (16, the tighter
// leaf), leaf1 = nodes 3-5 with 8 + 8 + 4 free (20).
Cluster HalfUsedTightLeaf() {
  Cluster c = testing::MakeCluster(1, 1, 2, 3, 8);
  Use(c, 0, 4);
  Use(c, 1, 4);
  Use(c, 5, 4);
  return c;
}

TEST(PlannerWholeNodes, TakesWholeNodesInAnotherLeafOverHalfNodesInTheTightestOne) {
  Cluster c = HalfUsedTightLeaf();
  // Best fit alone: leaf0 as 1 + 1 + 2 members, two nodes with half their NICs.
  auto p = Planner(c).Plan(Gang(4, 4));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(c.LevelName(p->level), "leaf");  // no wider than best fit's tier
  EXPECT_EQ(PerNode(*p), (std::vector<std::pair<int, int>>{{3, 2}, {4, 2}}));
  std::set<int> gpus;
  for (const MemberPlacement& m : p->members) {
    EXPECT_EQ(m.gpus.size(), 4u);
    for (int g : m.gpus) {
      EXPECT_EQ(c.GpuNode(g), m.node);
      EXPECT_TRUE(gpus.insert(g).second) << "GPU " << g << " given twice";
    }
  }
}

TEST(PlannerWholeNodes, NeverSpansAWiderTierForWholeNodes) {
  Cluster c = testing::MakeCluster(1, 1, 2, 3, 8);
  Use(c, 0, 4);  // leaf0: 4 + 4 + 8 free: the only leaf with room for 4 members
  Use(c, 1, 4);
  Use(c, 4, 8);  // leaf1: 8 + 0 + 0
  Use(c, 5, 8);
  // Whole nodes would need both leaves (the spine); the half nodes in one leaf stay.
  auto p = Planner(c).Plan(Gang(4, 4));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(c.LevelName(p->level), "leaf");
  EXPECT_EQ(PerNode(*p), (std::vector<std::pair<int, int>>{{0, 1}, {1, 1}, {2, 2}}));
}

TEST(PlannerWholeNodes, AGangThatCannotFillItsNodesEvenlyIsLeftAsPlanned) {
  Cluster c = HalfUsedTightLeaf();
  // 3 members of 4 GPUs: some node has a single member whatever the choice, so best fit
  // stands: leaf0, its free node and one half-free node.
  auto p = Planner(c).Plan(Gang(3, 4));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(PerNode(*p), (std::vector<std::pair<int, int>>{{0, 1}, {2, 2}}));
}

TEST(PlannerWholeNodes, TwoGpuMembersFillWholeNodesToo) {
  Cluster c = testing::MakeCluster(1, 1, 2, 3, 8);
  Use(c, 0, 4);  // leaf0: 4 + 4 + 8 free (16), the tighter leaf
  Use(c, 1, 4);
  Use(c, 5, 2);  // leaf1: 8 + 8 + 6 free (22)
  // Best fit alone: leaf0 as 2 + 2 + 4 members.
  auto p = Planner(c).Plan(Gang(8, 2));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(PerNode(*p), (std::vector<std::pair<int, int>>{{3, 4}, {4, 4}}));
}

}  // namespace
}  // namespace topogang
