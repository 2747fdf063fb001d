// preferred_tier: a gang lands within one domain of its preferred tier whenever one has room,
// and otherwise within the lowest tier that fits (never wider than needed); preferred_met says
// which. Cluster: 1 zone x 2 spines x 2 leaves x 4 nodes x 8 GPUs; nodes 0-3 leaf0, 4-7 leaf1
// (spine0), 8-11 leaf2, 12-15 leaf3 (spine1).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "scheduler/planner.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

GangSpec Gang(int members, int gpus, std::string preferred, std::string required = "") {
  GangSpec g;
  g.name = "g";
  g.members = members;
  g.gpus_per_member = gpus;
  g.preferred_tier = std::move(preferred);
  g.required_tier = std::move(required);
  return g;
}

void Fill(Cluster& c, const std::vector<int>& nodes) {
  std::vector<int> gpus;
  for (int n : nodes) {
    for (int g = 0; g < c.node(n).gpus; ++g) gpus.push_back(c.node(n).gpu_begin + g);
  }
  ASSERT_TRUE(c.Allocate(gpus).ok());
}

std::set<int> Nodes(const std::vector<MemberPlacement>& members) {
  std::set<int> s;
  for (const MemberPlacement& m : members) s.insert(m.node);
  return s;
}

// Free: leaf0 nodes 0,1 (16 GPUs), leaf1 node 7, leaf2 node 11, leaf3 node 15 (8 each). spine1
// (16 free) is the tightest spine, but only leaf0 holds 2 x 8 within one leaf.
Cluster OneRoomyLeaf() {
  Cluster c = testing::MakeCluster(1, 2, 2, 4, 8);
  Fill(c, {2, 3, 4, 5, 6, 8, 9, 10, 12, 13, 14});
  return c;
}

TEST(PlannerPreferredTier, FitsWithinThePreferredTierWhenOneHasRoom) {
  Cluster c = OneRoomyLeaf();
  auto p = Planner(c).Plan(Gang(2, 8, "leaf"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Nodes(p->members), (std::set<int>{0, 1}));
  EXPECT_EQ(p->level, c.LevelByName("leaf"));
  EXPECT_TRUE(p->preferred_met);
}

TEST(PlannerPreferredTier, RequiredWiderThanPreferredStillPrefersTheLeaf) {
  Cluster c = OneRoomyLeaf();
  auto p = Planner(c).Plan(Gang(2, 8, "leaf", "spine"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Nodes(p->members), (std::set<int>{0, 1}));
  EXPECT_TRUE(p->preferred_met);
}

TEST(PlannerPreferredTier, NarrowerThanPreferredIsBetterStill) {
  // 2 x 2 GPUs preferring a leaf fits one node: it takes one (the tightest: a whole free node
  // in the fullest leaf, node 7), which is within a leaf too.
  Cluster c = OneRoomyLeaf();
  auto p = Planner(c).Plan(Gang(2, 2, "leaf"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Nodes(p->members).size(), 1u);
  EXPECT_EQ(p->level, c.node_level());
  EXPECT_TRUE(p->preferred_met);
}

TEST(PlannerPreferredTier, FallsBackToTheLowestTierThatFits) {
  // One node filled in every leaf: no leaf holds 4 x 8, spine0 does (48 free). The gang spans
  // one spine, and within it two leaves, not three.
  Cluster c = testing::MakeCluster(1, 2, 2, 4, 8);
  Fill(c, {0, 4, 8, 12});
  auto p = Planner(c).Plan(Gang(4, 8, "leaf"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->level, c.LevelByName("spine"));
  EXPECT_FALSE(p->preferred_met);
  EXPECT_EQ(p->domains_per_level[c.LevelByName("leaf")], 2);
  // Too big for any spine: the zone (the whole cluster here), still reported as not met.
  auto q = Planner(c).Plan(Gang(7, 8, "leaf"));
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->level, c.LevelByName("core"));
  EXPECT_FALSE(q->preferred_met);
}

TEST(PlannerPreferredTier, ReplacementStaysInTheSurvivorsLeafWhenItHasRoom) {
  // A 2 x 8 gang on nodes 0,1 loses node 1. Leaf0 still has node 3: the replacement goes there
  // although node 7 (leaf1) is an equally whole free node. Once leaf0 is full it widens to the
  // spine, not further.
  Cluster c = testing::MakeCluster(1, 2, 2, 4, 8);
  Fill(c, {0, 1, 2, 4, 5, 6});
  const std::vector<int> survivors = {0};
  auto r = Planner(c).PlanNear(Gang(2, 8, "leaf"), 1, survivors);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Nodes(*r), (std::set<int>{3}));
  Fill(c, {3});
  auto w = Planner(c).PlanNear(Gang(2, 8, "leaf"), 1, survivors);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(Nodes(*w), (std::set<int>{7}));
}

}  // namespace
}  // namespace topogang
