// How the planner splits a gang that no single domain holds, and the rank order it returns.
//  - Across NVLink domains (an all-reduce across them is as slow as the smallest share) and
//    across an oversubscribed tier, members are shared evenly over as few domains as possible.
//  - Through non-blocking tiers the domains of the lowest tier (racks) are chosen directly.
//  - Across non-blocking leaves of HGX nodes the split costs nothing: best fit (see
//    planner_test.cc SpansFewestChildDomains).
//  - Members come back in rank order: by node, so every domain's members are contiguous.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "scheduler/planner.h"
#include "scheduler/rank_order.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

Cluster Nvl(int leaves = 2) { return testing::MakeNvlCluster(leaves); }

// Marks every GPU of the given nodes used.
void Fill(Cluster& c, const std::vector<int>& nodes) {
  std::vector<int> gpus;
  for (int n : nodes) {
    for (int g = 0; g < c.node(n).gpus; ++g) gpus.push_back(c.node(n).gpu_begin + g);
  }
  ASSERT_TRUE(c.Allocate(gpus).ok());
}

GangSpec Gang(int members, int gpus, std::string preferred = "") {
  GangSpec g;
  g.name = "g";
  g.members = members;
  g.gpus_per_member = gpus;
  g.preferred_tier = std::move(preferred);
  return g;
}

// Members per domain of `level`, keyed by domain id.
std::map<int, int> PerDomain(const Cluster& c, const Placement& p, int level) {
  std::map<int, int> out;
  for (const MemberPlacement& m : p.members) ++out[c.AncestorAt(c.NodeDomain(m.node), level)];
  return out;
}

std::vector<int> Counts(const std::map<int, int>& m) {
  std::vector<int> v;
  for (const auto& [d, k] : m) v.push_back(k);
  return v;
}

TEST(PlannerSplit, SharesNvlinkDomainsEvenly) {
  Cluster c = Nvl();
  const int nvl = c.LevelByName("nvlink");
  ASSERT_GT(nvl, 0);
  Fill(c, {7, 8, 9, 10, 12, 13, 14});  // racks: 4, 3, 1, 1 trays free
  // 6 trays fit leaf0 (4 + 3) but no rack: 3 + 3, not 4 + 2 (the rack with 2 trays would give
  // its 8 GPUs' NICs to the hierarchical ring that the other rack feeds with 16).
  auto p = Planner(c).Plan(Gang(6, 4, "nvlink"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(c.LevelName(p->level), "leaf");
  EXPECT_EQ(Counts(PerDomain(c, *p, nvl)), (std::vector<int>{3, 3}));
  EXPECT_FALSE(p->preferred_met);
}

TEST(PlannerSplit, ChoosesWholeRacksAcrossLeavesNotTheRoomiestLeaf) {
  Cluster c = Nvl();
  const int nvl = c.LevelByName("nvlink");
  Fill(c, {3, 7, 12, 13, 14, 15});  // leaf0: racks 3 + 3 free; leaf1: racks 4 + 0
  // 7 trays: no leaf holds them. By leaves, leaf0 (6) first and 1 tray in leaf1: three racks,
  // one of them with a single tray. By racks: the whole free rack and one of leaf0's, 4 + 3.
  auto p = Planner(c).Plan(Gang(7, 4));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::map<int, int> racks = PerDomain(c, *p, nvl);
  EXPECT_EQ(racks.size(), 2u);
  EXPECT_EQ(racks.at(c.AncestorAt(c.NodeDomain(8), nvl)), 4);  // the whole free rack
}

TEST(PlannerSplit, SharesAnOversubscribedTierEvenly) {
  // Two islands at 7:1: each side's uplinks carry the whole ring, so the smaller side decides.
  Cluster c = testing::MakeCluster(2, 1, 1, 4, 8, "[H100]", 0,
                                   "topology: {preset: topograph, cluster_oversubscription: 7}\n");
  Fill(c, {0, 4, 5});  // zone0: 3 nodes free, zone1: 2
  auto p = Planner(c).Plan(Gang(4, 8));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Counts(PerDomain(c, *p, 1)), (std::vector<int>{2, 2}));  // not 3 + 1
}

TEST(PlannerSplit, WholeNodesPerDomainForHalfNodeMembers) {
  // Members of 4 GPUs on 8-GPU nodes, across the two islands: shares are whole nodes (even
  // member counts), so no node carries a single member and half its NICs.
  Cluster c = testing::MakeCluster(2, 1, 1, 4, 8, "[H100]", 0,
                                   "topology: {preset: topograph, cluster_oversubscription: 3}\n");
  Fill(c, {0, 4});                        // 3 nodes free in each island
  auto p = Planner(c).Plan(Gang(10, 4));  // 5 nodes' worth: 3 + 2 nodes, never 2.5 + 2.5
  ASSERT_TRUE(p.ok()) << p.status();
  std::map<int, int> per_node;
  for (const MemberPlacement& m : p->members) ++per_node[m.node];
  for (const auto& [node, k] : per_node) EXPECT_EQ(k, 2) << "node " << node;
  EXPECT_EQ(Counts(PerDomain(c, *p, 1)), (std::vector<int>{6, 4}));
}

TEST(PlannerSplit, MembersComeBackInRankOrder) {
  Cluster c = testing::MakeCluster(1, 2, 2, 4, 8);
  Fill(c, {1, 2, 5, 9, 10});
  for (int members : {3, 5, 9, 13}) {
    auto p = Planner(c).Plan(Gang(members, 4));
    ASSERT_TRUE(p.ok()) << members << ": " << p.status();
    std::vector<int> want(p->members.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<int>(i);
    EXPECT_EQ(RankOrder(*p), want) << members << " members are not in rank order";
    for (size_t i = 1; i < p->members.size(); ++i) {
      EXPECT_LE(p->members[i - 1].node, p->members[i].node);
    }
  }
}

TEST(PlannerSplit, ReplacementsComeBackInRankOrderAndRankOrderSortsAPatchedGang) {
  Cluster c = testing::MakeCluster(1, 1, 2, 4, 8);
  auto p = Planner(c).Plan(Gang(4, 8));
  ASSERT_TRUE(p.ok());
  std::vector<int> gpus = p->Gpus();
  ASSERT_TRUE(c.Allocate(gpus).ok());
  // Members 1 and 2 are lost; the replacements go next to the survivors, in rank order.
  const std::vector<int> survivors = {p->members[0].node, p->members[3].node};
  auto r = Planner(c).PlanNear(Gang(4, 8), 2, survivors);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_LT((*r)[0].node, (*r)[1].node);
  // Patched in place, ordinals 1 and 2 now sit after ordinal 3 on the node line (leaf1).
  Placement patched = *p;
  patched.members[1] = (*r)[0];
  patched.members[2] = (*r)[1];
  std::vector<int> want;
  std::vector<std::pair<int, int>> by_node;
  for (int i = 0; i < 4; ++i) by_node.emplace_back(patched.members[i].node, i);
  std::sort(by_node.begin(), by_node.end());
  for (auto [node, i] : by_node) want.push_back(i);
  EXPECT_EQ(RankOrder(patched), want);
  std::vector<MemberPlacement> sorted = patched.members;
  SortByRank(&sorted);
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i].node, by_node[i].first);
  // A released member (node -1) ranks last.
  patched.members[0] = MemberPlacement{};
  EXPECT_EQ(RankOrder(patched).back(), 0);
}

}  // namespace
}  // namespace topogang
