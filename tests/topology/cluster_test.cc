#include "topology/cluster.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace topogang {
namespace {

using testing::MakeCluster;

NodeSpec Node(std::string name, int gpus, std::map<std::string, std::string> labels,
              std::string sku = "H100") {
  return NodeSpec{std::move(name), gpus, std::move(sku), std::move(labels)};
}

const std::string kSpine = "network.topology.nvidia.com/spine";
const std::string kLeaf = "network.topology.nvidia.com/leaf";

TEST(Cluster, DomainsAreContiguousAndNested) {
  Cluster c = MakeCluster(2, 2, 3, 4, 8);
  EXPECT_EQ(c.num_nodes(), 48);
  EXPECT_EQ(c.num_gpus(), 384);
  EXPECT_EQ(c.LevelName(0), "cluster");
  EXPECT_EQ(c.LevelName(c.node_level()), "node");
  EXPECT_EQ(c.LevelByName("leaf"), 3);
  for (int d = 1; d < c.num_domains(); ++d) {
    const Domain& dom = c.domain(d);
    const Domain& parent = c.domain(dom.parent);
    EXPECT_EQ(parent.level + 1, dom.level);
    EXPECT_LE(parent.node_begin, dom.node_begin);
    EXPECT_GE(parent.node_end, dom.node_end);
    EXPECT_EQ(dom.gpu_begin, c.node(dom.node_begin).gpu_begin);
    EXPECT_GE(d, parent.child_begin);
    EXPECT_LT(d, parent.child_end);
  }
  // 2 zones, 4 spines, 12 leaves, 48 nodes.
  EXPECT_EQ(c.LevelEnd(1) - c.LevelBegin(1), 2);
  EXPECT_EQ(c.LevelEnd(2) - c.LevelBegin(2), 4);
  EXPECT_EQ(c.LevelEnd(3) - c.LevelBegin(3), 12);
}

// Label values repeat under different parents ("spine0" in both zones): they are different
// domains because a domain is identified by its full path.
TEST(Cluster, RepeatedLabelValuesAreDistinctDomains) {
  Cluster c = MakeCluster(2, 1, 1, 2, 8);
  int s0 = c.AncestorAt(c.NodeDomain(0), 2), s1 = c.AncestorAt(c.NodeDomain(3), 2);
  EXPECT_NE(s0, s1);
  EXPECT_EQ(c.domain(s0).name, c.domain(s1).name);
  EXPECT_EQ(c.DomainPath(s0), "zone0/spine0");
  EXPECT_EQ(c.DomainPath(s1), "zone1/spine0");
}

TEST(Cluster, NodesSortedByLabelPathNotByInputOrder) {
  ClusterSpec spec;
  spec.nodes = {
      Node("z", 8, {{kSpine, "s2"}, {kLeaf, "l1"}}), Node("a", 8, {{kSpine, "s1"}, {kLeaf, "l2"}}),
      Node("m", 8, {{kSpine, "s2"}, {kLeaf, "l1"}}), Node("b", 8, {{kSpine, "s1"}, {kLeaf, "l1"}})};
  auto c = Cluster::Build(spec, *PresetTopology("topograph"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->node(0).name, "b");
  EXPECT_EQ(c->node(1).name, "a");
  EXPECT_EQ(c->node(2).name, "m");
  EXPECT_EQ(c->node(3).name, "z");
  EXPECT_EQ(c->AncestorAt(c->NodeDomain(2), 2), c->AncestorAt(c->NodeDomain(3), 2));
}

TEST(Cluster, MissingLabelIsolatesNodeAndWarns) {
  ClusterSpec spec;
  spec.nodes = {Node("a", 8, {{kSpine, "s1"}, {kLeaf, "l1"}}),
                Node("b", 8, {{kSpine, "s1"}, {kLeaf, "l1"}}), Node("lost1", 8, {{kSpine, "s1"}}),
                Node("lost2", 8, {{kSpine, "s1"}})};
  std::vector<std::string> warnings;
  auto c = Cluster::Build(spec, *PresetTopology("topograph"), &warnings);
  ASSERT_TRUE(c.ok());
  int leaf = c->LevelByName("leaf");
  int l_lost1 = c->AncestorAt(c->NodeDomain(c->FindNode("lost1")), leaf);
  int l_lost2 = c->AncestorAt(c->NodeDomain(c->FindNode("lost2")), leaf);
  EXPECT_NE(l_lost1, l_lost2) << "two unlabelled nodes must not share a leaf";
  EXPECT_TRUE(c->domain(l_lost1).unknown);
  EXPECT_EQ(c->domain(l_lost1).name, "unknown(lost1)");
  int reported = 0;
  for (const auto& w : warnings) reported += w.find("lost") != std::string::npos;
  EXPECT_EQ(reported, 2);
}

TEST(Cluster, TierNoNodeCarriesIsDroppedWithWarning) {
  ClusterSpec spec;
  spec.nodes = {Node("a", 8, {{kSpine, "s1"}, {kLeaf, "l1"}})};
  std::vector<std::string> warnings;
  auto c = Cluster::Build(spec, *PresetTopology("topograph"), &warnings);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->LevelByName("core"), -1);
  EXPECT_EQ(c->LevelByName("accelerator"), -1);
  ASSERT_EQ(warnings.size(), 1u);  // core (required) is reported; accelerator is optional
  EXPECT_NE(warnings[0].find("core"), std::string::npos);
}

TEST(Cluster, AllocateReleaseKeepCountersExact) {
  Cluster c = MakeCluster(1, 2, 2, 2, 8);
  int leaf0 = c.LevelBegin(3);
  EXPECT_EQ(c.FreeHealthy(0), 64);
  EXPECT_EQ(c.MemberCapacity(leaf0, kAnySku, 8), 2);
  std::vector<int> gpus = {0, 1, 2};
  ASSERT_TRUE(c.Allocate(gpus).ok());
  EXPECT_EQ(c.FreeHealthy(0), 61);
  EXPECT_EQ(c.FreeHealthy(leaf0), 13);
  EXPECT_EQ(c.NodeFreeHealthy(0), 5);
  EXPECT_EQ(c.MemberCapacity(leaf0, kAnySku, 8), 1);
  EXPECT_EQ(c.MemberCapacity(leaf0, kAnySku, 4), 3);  // 5/4 + 8/4
  EXPECT_TRUE(c.CheckInvariants().ok());
  ASSERT_TRUE(c.Release(gpus).ok());
  EXPECT_EQ(c.FreeHealthy(0), 64);
  EXPECT_TRUE(c.CheckInvariants().ok());
}

TEST(Cluster, AllocateIsAllOrNothing) {
  Cluster c = MakeCluster(1, 1, 1, 2, 8);
  ASSERT_TRUE(c.Allocate(std::vector<int>{3}).ok());
  // 3 is taken: nothing of the batch may be allocated.
  EXPECT_FALSE(c.Allocate(std::vector<int>{1, 2, 3}).ok());
  EXPECT_TRUE(c.IsFree(1));
  EXPECT_TRUE(c.IsFree(2));
  EXPECT_FALSE(c.Allocate(std::vector<int>{4, 4}).ok());
  EXPECT_TRUE(c.IsFree(4));
  EXPECT_FALSE(c.Allocate(std::vector<int>{-1}).ok());
  EXPECT_FALSE(c.Allocate(std::vector<int>{16}).ok());
  EXPECT_FALSE(c.Release(std::vector<int>{3, 5}).ok()) << "5 is not in use";
  EXPECT_FALSE(c.IsFree(3));
  EXPECT_TRUE(c.CheckInvariants().ok());
}

TEST(Cluster, CordonAndFaultClearHealthAndRestore) {
  Cluster c = MakeCluster(1, 1, 1, 2, 8);
  c.SetGpuFaulty(2, true);
  EXPECT_FALSE(c.IsHealthy(2));
  EXPECT_EQ(c.NodeFreeHealthy(0), 7);
  EXPECT_FALSE(c.Allocate(std::vector<int>{2}).ok());
  EXPECT_TRUE(c.Allocate(std::vector<int>{2}, /*require_healthy=*/false).ok());
  ASSERT_TRUE(c.Release(std::vector<int>{2}).ok());
  c.SetNodeCordoned(0, true);
  EXPECT_EQ(c.NodeFreeHealthy(0), 0);
  EXPECT_EQ(c.FreeHealthy(0), 8);
  c.SetNodeCordoned(0, false);
  // The fault survives the uncordon.
  EXPECT_FALSE(c.IsHealthy(2));
  EXPECT_EQ(c.NodeFreeHealthy(0), 7);
  c.SetGpuFaulty(2, false);
  EXPECT_EQ(c.FreeHealthy(0), 16);
  EXPECT_TRUE(c.CheckInvariants().ok());
}

TEST(Cluster, PerSkuCountersAndCapacity) {
  Cluster c = MakeCluster(1, 1, 2, 2, 8, "[H100, A100]");
  ASSERT_EQ(c.num_skus(), 2);
  int h = c.FindSku("H100"), a = c.FindSku("A100");
  EXPECT_EQ(c.FreeHealthy(0, h), 16);
  EXPECT_EQ(c.FreeHealthy(0, a), 16);
  EXPECT_EQ(c.MemberCapacity(0, h, 8), 2);
  EXPECT_EQ(c.MemberCapacity(0, kAnySku, 8), 4);
  EXPECT_EQ(c.FindSku("B200"), -1);
}

TEST(Cluster, BandwidthIsBottleneckOfSpannedLevels) {
  TopologyConfig topo = *PresetTopology("topograph");
  topo.cluster_oversubscription = 7;
  topo.tiers[1].oversubscription = 2;  // spine 2:1
  std::string header =
      "topology: {preset: topograph, cluster_oversubscription: 7, tiers: ["
      "{name: core, label: network.topology.nvidia.com/core, bandwidth_gbps: 400},"
      "{name: spine, label: network.topology.nvidia.com/spine, bandwidth_gbps: 400, "
      "oversubscription: 2},"
      "{name: leaf, label: network.topology.nvidia.com/leaf, bandwidth_gbps: 400}]}\n";
  Cluster c = MakeCluster(2, 2, 2, 2, 8, "[H100]", 0, header);
  EXPECT_DOUBLE_EQ(c.SpanBandwidthGbps(c.node_level()), 7200);
  EXPECT_DOUBLE_EQ(c.SpanBandwidthGbps(c.LevelByName("leaf")), 400);
  EXPECT_DOUBLE_EQ(c.SpanBandwidthGbps(c.LevelByName("spine")), 200);
  EXPECT_DOUBLE_EQ(c.SpanBandwidthGbps(c.LevelByName("core")), 200);
  EXPECT_NEAR(c.SpanBandwidthGbps(0), 400.0 / 7, 1e-9);
  // Uplinks of a domain into its parent: the parent tier's oversubscription.
  EXPECT_DOUBLE_EQ(c.UplinkOversubscription(c.LevelByName("core")), 7);   // islands into the root
  EXPECT_DOUBLE_EQ(c.UplinkOversubscription(c.LevelByName("spine")), 1);  // into a core switch
  EXPECT_DOUBLE_EQ(c.UplinkOversubscription(c.LevelByName("leaf")), 2);   // into a spine
  EXPECT_DOUBLE_EQ(c.UplinkOversubscription(c.node_level()), 1);  // NICs into a leaf (1:1 here)
  EXPECT_DOUBLE_EQ(c.UplinkOversubscription(0), 1);               // the root has none
}

TEST(Cluster, ZeroGpuNodesAreLeftOut) {
  ClusterSpec spec;
  spec.nodes = {Node("cpu", 0, {{kSpine, "s"}, {kLeaf, "l"}}),
                Node("gpu", 8, {{kSpine, "s"}, {kLeaf, "l"}})};
  auto c = Cluster::Build(spec, *PresetTopology("topograph"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->num_nodes(), 1);
  EXPECT_EQ(c->FindNode("cpu"), -1);
}

TEST(Cluster, RejectsDuplicateNodes) {
  ClusterSpec spec;
  spec.nodes = {Node("a", 8, {}), Node("a", 8, {})};
  auto c = Cluster::Build(spec, *PresetTopology("topograph"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("duplicate node name 'a'"), std::string::npos);
}

}  // namespace
}  // namespace topogang
