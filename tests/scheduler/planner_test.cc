#include "scheduler/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;
using testing::MakeCluster;

GangSpec Gang(std::string name, int members, int gpus, std::string required = "") {
  GangSpec g;
  g.name = std::move(name);
  g.members = members;
  g.gpus_per_member = gpus;
  g.required_tier = std::move(required);
  return g;
}

// Fills whole nodes [first, last] so tests can shape free capacity.
void FillNodes(Cluster& c, int first, int last) {
  std::vector<int> gpus;
  for (int n = first; n <= last; ++n) {
    for (int g = 0; g < c.node(n).gpus; ++g) gpus.push_back(c.node(n).gpu_begin + g);
  }
  ASSERT_TRUE(c.Allocate(gpus).ok());
}

TEST(Planner, SingleMemberGoesToOneNode) {
  Cluster c = MakeCluster(1, 2, 2, 4, 8);
  auto p = Planner(c).Plan(Gang("g", 1, 8));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->level, c.node_level());
  EXPECT_EQ(p->members.size(), 1u);
  EXPECT_EQ(p->members[0].gpus.size(), 8u);
  EXPECT_DOUBLE_EQ(p->bandwidth_gbps, 7200);
}

TEST(Planner, PrefersLowestTierThatFits) {
  Cluster c = MakeCluster(1, 2, 2, 4, 8);  // leaves of 4 nodes
  auto p = Planner(c).Plan(Gang("g", 4, 8));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(c.LevelName(p->level), "leaf");
  auto q = Planner(c).Plan(Gang("big", 6, 8));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(c.LevelName(q->level), "spine");
  EXPECT_EQ(q->domains_per_level[c.LevelByName("leaf")], 2);
}

// Best fit: the leaf with exactly enough room is chosen over an empty one.
TEST(Planner, BestFitChoosesTightestDomain) {
  Cluster c = MakeCluster(1, 1, 3, 4, 8);
  FillNodes(c, 4, 5);  // leaf1 has 2 free nodes; leaf0 and leaf2 have 4
  auto p = Planner(c).Plan(Gang("g", 2, 8));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(c.DomainPath(p->domain), "zone0/spine0/leaf1");
  EXPECT_EQ(p->leftover_gpus, 0);
}

// A gang of one lands on a node that is already partly used, in a domain already in use, so
// empty leaves stay whole.
TEST(Planner, SmallGangsDoNotShredEmptyDomains) {
  Cluster c = MakeCluster(1, 1, 2, 2, 8);
  ASSERT_TRUE(c.Allocate(std::vector<int>{c.node(3).gpu_begin}).ok());  // leaf1, node 3: 7 free
  auto p = Planner(c).Plan(Gang("one", 1, 2));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->members[0].node, 3);
  // Whole free node needed: prefer the leaf that is already in use.
  auto q = Planner(c).Plan(Gang("eight", 1, 8));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->members[0].node, 2) << "node 2 shares the used leaf; leaf0 stays empty";
}

TEST(Planner, SpansFewestChildDomains) {
  Cluster c = MakeCluster(1, 1, 4, 4, 8);
  FillNodes(c, 0, 2);  // leaf0: 1 free node
  FillNodes(c, 4, 5);  // leaf1: 2 free
  FillNodes(c, 8, 8);  // leaf2: 3 free; leaf3: 4 free
  auto p = Planner(c).Plan(Gang("g", 7, 8));
  ASSERT_TRUE(p.ok());
  // 7 = 4 (leaf3) + 3 (leaf2): two leaves, not three.
  EXPECT_EQ(p->domains_per_level[c.LevelByName("leaf")], 2);
  // 5 = 4 + the tightest leaf holding 1 (leaf0): the leaves are non-blocking, so the split costs
  // nothing and best fit keeps leaf2's three free nodes together.
  Cluster c2 = MakeCluster(1, 1, 4, 4, 8);
  FillNodes(c2, 0, 2);
  FillNodes(c2, 4, 5);
  FillNodes(c2, 8, 8);
  auto q = Planner(c2).Plan(Gang("g", 5, 8));
  ASSERT_TRUE(q.ok());
  std::set<std::string> leaves;
  for (int n : q->Nodes()) leaves.insert(c2.DomainPath(c2.AncestorAt(c2.NodeDomain(n), 3)));
  EXPECT_EQ(leaves, (std::set<std::string>{"zone0/spine0/leaf0", "zone0/spine0/leaf3"}));
}

TEST(Planner, RequiredTierNoFitNamesTightestConstraint) {
  Cluster c = MakeCluster(1, 1, 2, 4, 8);
  FillNodes(c, 0, 0);
  auto p = Planner(c).Plan(Gang("wide", 5, 8, "leaf"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(p.status().message(),
              HasSubstr("needs 5 members x 8 GPUs (40 GPUs) within one leaf; the largest free "
                        "leaf (zone0/spine0/leaf1) has room for only 4 members (32 GPUs)"));
  // Without the constraint it fits across leaves.
  EXPECT_TRUE(Planner(c).Plan(Gang("wide", 5, 8)).ok());
}

TEST(Planner, ClusterFullReason) {
  Cluster c = MakeCluster(1, 1, 1, 2, 8);
  auto p = Planner(c).Plan(Gang("huge", 3, 8));
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("room for only 2 members (16 GPUs)"));
}

TEST(Planner, NeverUsesUnhealthyOrUsedGpus) {
  Cluster c = MakeCluster(1, 1, 1, 2, 8);
  c.SetGpuFaulty(1, true);
  ASSERT_TRUE(c.Allocate(std::vector<int>{2}).ok());
  c.SetNodeCordoned(1, true);
  auto p = Planner(c).Plan(Gang("g", 6, 1));
  ASSERT_TRUE(p.ok());
  for (int g : p->Gpus()) EXPECT_TRUE(c.IsUsable(g)) << g;
  EXPECT_FALSE(Planner(c).Plan(Gang("g", 7, 1)).ok());
}

TEST(Planner, MemberLargerThanAnyNode) {
  Cluster c = MakeCluster(1, 1, 1, 2, 8);
  auto p = Planner(c).Plan(Gang("g", 1, 16));
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("largest node has 8"));
}

TEST(Planner, SkuNeverMixedUnlessAllowed) {
  Cluster c = MakeCluster(1, 1, 2, 2, 8, "[H100, A100]");  // leaf0 H100, leaf1 A100
  GangSpec g = Gang("g", 3, 8);
  EXPECT_FALSE(Planner(c).Plan(g).ok()) << "2 H100 + 2 A100 nodes: 3 members need mixing";
  g.allow_mixed_sku = true;
  EXPECT_TRUE(Planner(c).Plan(g).ok());
  GangSpec a = Gang("a", 2, 8);
  a.sku = "A100";
  auto p = Planner(c).Plan(a);
  ASSERT_TRUE(p.ok());
  for (int n : p->Nodes()) EXPECT_EQ(c.SkuName(c.node(n).sku), "A100");
  a.sku = "B200";
  EXPECT_THAT(Planner(c).Plan(a).status().message(), HasSubstr("no node has GPU model 'B200'"));
}

TEST(Planner, SlicesStayWithinTheirTier) {
  // Two NVLink domains of 2 nodes per leaf; 4 leaves.
  Cluster c = MakeCluster(1, 1, 4, 4, 4, "[GB200]", 2);
  ASSERT_EQ(c.LevelName(4), "accelerator");
  // Leave every NVLink domain with one free node except one fully free domain per leaf pair.
  FillNodes(c, 0, 0);
  FillNodes(c, 2, 2);
  FillNodes(c, 4, 4);
  GangSpec g = Gang("tp", 4, 4);
  g.slice = {2, "accelerator"};  // 2 slices of 2 members, each inside one NVLink domain
  auto p = Planner(c).Plan(g);
  ASSERT_TRUE(p.ok()) << p.status();
  int acc = c.LevelByName("accelerator");
  for (int s = 0; s < 2; ++s) {
    int a = c.AncestorAt(c.NodeDomain(p->members[2 * s].node), acc);
    int b = c.AncestorAt(c.NodeDomain(p->members[2 * s + 1].node), acc);
    EXPECT_EQ(a, b) << "slice " << s << " split across NVLink domains";
  }
}

TEST(Planner, SliceNoFitWhenFreeGpusAreScattered) {
  Cluster c = MakeCluster(1, 1, 1, 4, 4, "[GB200]", 2);
  FillNodes(c, 0, 0);
  FillNodes(c, 2, 2);  // each NVLink domain has one free node: 8 GPUs, 2 members
  GangSpec g = Gang("tp", 2, 4);
  EXPECT_TRUE(Planner(c).Plan(g).ok());
  g.slice = {2, "accelerator"};
  auto p = Planner(c).Plan(g);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("each slice within one accelerator"));
}

TEST(Planner, InvalidSpecs) {
  Cluster c = MakeCluster(1, 1, 1, 2, 8);
  EXPECT_EQ(Planner(c).Plan(Gang("g", 0, 8)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Planner(c).Plan(Gang("g", 1, 0)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Planner(c).Plan(Gang("g", 1, 8, "rack")).status().message(),
              HasSubstr("unknown required tier 'rack'"));
  GangSpec s = Gang("g", 3, 1);
  s.slice = {2, "leaf"};
  EXPECT_THAT(Planner(c).Plan(s).status().message(), HasSubstr("multiple of the slice size"));
  GangSpec w = Gang("g", 2, 1, "leaf");
  w.slice = {1, "spine"};
  EXPECT_THAT(Planner(c).Plan(w).status().message(), HasSubstr("wider than required tier"));
}

TEST(Planner, PreferredTierReported) {
  Cluster c = MakeCluster(1, 1, 2, 2, 8);
  GangSpec g = Gang("g", 2, 8);
  g.preferred_tier = "leaf";
  auto p = Planner(c).Plan(g);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->preferred_met);
  g.members = 3;
  auto q = Planner(c).Plan(g);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->preferred_met);
}

TEST(Planner, DeterministicForSameInput) {
  Cluster c = MakeCluster(2, 2, 2, 4, 8);
  FillNodes(c, 3, 9);
  auto a = Planner(c).Plan(Gang("g", 9, 4));
  auto b = Planner(c).Plan(Gang("g", 9, 4));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->Gpus(), b->Gpus());
}

TEST(Planner, PlanNearKeepsReplacementInSurvivorsLeaf) {
  Cluster c = MakeCluster(1, 2, 2, 4, 8);
  // Survivors on nodes 0 and 1 (leaf0); nodes 4..7 (leaf1) empty, node 2 free in leaf0.
  FillNodes(c, 0, 1);
  FillNodes(c, 3, 3);
  GangSpec g = Gang("g", 3, 8);
  std::vector<int> anchors = {0, 1};
  auto r = Planner(c).PlanNear(g, 1, anchors);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].node, 2) << "the free node in the survivors' leaf";
  // Two lost members: leaf0 has no room for two; same spine next (leaf1), not spine1.
  auto r2 = Planner(c).PlanNear(g, 2, anchors);
  ASSERT_TRUE(r2.ok());
  for (const auto& m : *r2) {
    EXPECT_EQ(c.AncestorAt(c.NodeDomain(m.node), 2), c.AncestorAt(c.NodeDomain(0), 2));
  }
}

}  // namespace
}  // namespace topogang
