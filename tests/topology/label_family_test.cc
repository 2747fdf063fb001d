// DetectTopology: which label family the GPU nodes carry, the tiers built from it, and the
// reports for mixes, nodes without labels and hostile keys.
#include "topology/label_family.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_util.h"
#include "common/yaml_util.h"
#include "tests/test_util.h"
#include "topology/cluster.h"
#include "topology/cluster_file.h"

namespace topogang {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Labels = std::map<std::string, std::string>;

NodeSpec Node(int i, Labels labels, int gpus = 8) {
  return NodeSpec{absl::StrFormat("gpu-%03d", i), gpus, "H100", std::move(labels)};
}

std::vector<std::string> TierNames(const TopologyDetection& d) {
  std::vector<std::string> names;
  for (const TierSpec& t : d.topology.tiers) names.push_back(t.name);
  return names;
}

TopologyDetection Detect(const std::vector<NodeSpec>& nodes) {
  return DetectTopology(nodes, *PresetTopology("auto"));
}

// Topograph v1: tier-0 nearest the node, domain/sub-domain below it.
Labels V1(int i, int depth = 3) {
  Labels l;
  for (int t = 0; t < depth; ++t) {
    l[absl::StrCat("fabric.topograph.run/tier-", t)] = absl::StrCat("s", t, "-", i >> (2 + t));
  }
  return l;
}

TEST(LabelFamily, TopographV1TiersAreWhatTheNodesCarryWidestFirst) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 16; ++i) {
    Labels l = V1(i);
    l["accelerator.topograph.run/domain"] = absl::StrCat("nvl", i / 4);
    l["accelerator.topograph.run/sub-domain"] = absl::StrCat("nvl", i / 4, ".rack", i / 2);
    nodes.push_back(Node(i, l));
  }
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "topograph-v1");
  EXPECT_THAT(TierNames(d), ElementsAre("tier-2", "tier-1", "tier-0", "accelerator", "sub-domain"));
  EXPECT_EQ(d.topology.tiers[0].label, "fabric.topograph.run/tier-2");
  EXPECT_FALSE(d.topology.tiers[2].optional);
  EXPECT_TRUE(d.topology.tiers[3].optional);
  EXPECT_EQ(d.topology.tiers[3].bandwidth_gbps, 14400);
  EXPECT_EQ(d.topology.node_bandwidth_gbps, 14400) << "an NVL domain means NVLink 5 nodes";
  EXPECT_FALSE(d.topology.detect);
  EXPECT_EQ(d.topology.preset, "topograph-v1");
  EXPECT_EQ(d.matching_nodes, 16);
  EXPECT_THAT(d.summary, HasSubstr("NVIDIA Topograph v1 labels on 16 of 16 GPU nodes"));
  EXPECT_THAT(d.summary, HasSubstr("tier-2 > tier-1 > tier-0 > accelerator > sub-domain"));
  EXPECT_THAT(d.reports, IsEmpty());

  auto c = Cluster::Build(ClusterSpec{"v1", nodes, std::nullopt}, d.topology);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->LevelName(3), "tier-0");
  EXPECT_EQ(c->MaxDomainGpus(3), 32) << "4 nodes per tier-0 switch";
  EXPECT_EQ(c->MaxDomainGpus(5), 16) << "2 nodes per sub-domain";
}

TEST(LabelFamily, TopographV1DepthFollowsTheLabels) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back(Node(i, V1(i, 2)));
  EXPECT_THAT(TierNames(Detect(nodes)), ElementsAre("tier-1", "tier-0"));
  nodes.push_back(Node(8, V1(8, 5)));
  TopologyDetection d = Detect(nodes);
  EXPECT_THAT(TierNames(d), ElementsAre("tier-4", "tier-3", "tier-2", "tier-1", "tier-0"));
  EXPECT_EQ(d.topology.node_bandwidth_gbps, 7200) << "no NVL domain: HGX nodes";
}

TEST(LabelFamily, AwsLayersOneIsTheTopAndAFourthLayerIsRead) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) {
    Labels l;
    for (int n = 1; n <= (i == 0 ? 4 : 3); ++n) {
      l[absl::StrCat("topology.k8s.aws/network-node-layer-", n)] = absl::StrCat("nn-", n, i / 2);
    }
    nodes.push_back(Node(i, l));
  }
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "aws");
  EXPECT_THAT(TierNames(d), ElementsAre("layer-1", "layer-2", "layer-3", "layer-4"));
  EXPECT_EQ(d.topology.tiers[3].label, "topology.k8s.aws/network-node-layer-4");
}

TEST(LabelFamily, GkeBlocksWithTheCliqueAsNvlinkAboveTheHost) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(Node(i, {{"cloud.google.com/gce-topology-block", "b0"},
                             {"cloud.google.com/gce-topology-subblock", absl::StrCat("sb", i / 2)},
                             {"cloud.google.com/gce-topology-host", absl::StrCat("h", i)},
                             {"nvidia.com/gpu.clique", absl::StrCat("uuid.", i / 2)}}));
  }
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "gke");
  EXPECT_THAT(TierNames(d), ElementsAre("block", "subblock", "nvlink", "host"));
  EXPECT_EQ(d.topology.tiers[2].label, "nvidia.com/gpu.clique");
}

TEST(LabelFamily, OciRdmaBlocksAndTheGpuMemoryFabric) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(Node(i, {{"oci.oraclecloud.com/rdma.hpc_island_id", "af7ubvouuyq"},
                             {"oci.oraclecloud.com/rdma.network_block_id", "7xmzl4p4wba"},
                             {"oci.oraclecloud.com/rdma.local_block_id", absl::StrCat("lb", i / 2)},
                             {"oci.oraclecloud.com/rdma.host_id", absl::StrCat("h", i)},
                             {"oci.oraclecloud.com/host.gpu_memory_fabric_id", "tkj3zctga"},
                             {"nvidia.com/gpu.clique", "uuid.1"}}));
  }
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "oci");
  EXPECT_THAT(TierNames(d), ElementsAre("hpc-island", "network-block", "local-block", "nvlink"));
  EXPECT_EQ(d.topology.tiers[3].label, "oci.oraclecloud.com/host.gpu_memory_fabric_id")
      << "the family's own NVLink label wins over the clique";
}

// Topograph documents OCI's host.* keys too; the GPU-memory-fabric key is shared by both OCI
// label sets, so the network keys decide which set a cluster carries.
TEST(LabelFamily, OciHostLabelsAndTheSharedFabricKeyDoNotDecide) {
  std::vector<NodeSpec> host, rdma;
  for (int i = 0; i < 4; ++i) {
    host.push_back(Node(i, {{"oci.oraclecloud.com/host.network_block_id", "nb1"},
                            {"oci.oraclecloud.com/host.rack_id", absl::StrCat("r", i / 2)},
                            {"oci.oraclecloud.com/host.gpu_memory_fabric_id", "f1"}}));
    rdma.push_back(Node(i, {{"oci.oraclecloud.com/rdma.local_block_id", absl::StrCat("lb", i / 2)},
                            {"oci.oraclecloud.com/host.gpu_memory_fabric_id", "f1"}}));
  }
  TopologyDetection h = Detect(host);
  EXPECT_EQ(h.family, "oci-host");
  EXPECT_THAT(TierNames(h), ElementsAre("network-block", "rack", "nvlink"));
  EXPECT_THAT(h.reports, IsEmpty());
  TopologyDetection r = Detect(rdma);
  EXPECT_EQ(r.family, "oci");
  EXPECT_THAT(TierNames(r), ElementsAre("local-block", "nvlink"));
  // Only the shared NVLink key anywhere: a domain-only cluster, still detected.
  std::vector<NodeSpec> fabric_only;
  for (int i = 0; i < 2; ++i) {
    fabric_only.push_back(Node(i, {{"oci.oraclecloud.com/host.gpu_memory_fabric_id", "f1"}}));
  }
  TopologyDetection f = Detect(fabric_only);
  EXPECT_EQ(f.family, "oci");
  EXPECT_THAT(TierNames(f), ElementsAre("nvlink"));
  EXPECT_EQ(f.matching_nodes, 2);
}

// One jobs file for every cluster: a family's own tier names get the generic leaf/spine/core
// and nvlink as aliases, which gang constraints resolve.
TEST(LabelFamily, GenericTierNamesAreAliasesOfTheFamilysOwn) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 16; ++i) {
    Labels l = V1(i);
    l["accelerator.topograph.run/domain"] = absl::StrCat("nvl", i / 4);
    nodes.push_back(Node(i, l));
  }
  TopologyDetection d = Detect(nodes);
  ASSERT_THAT(TierNames(d), ElementsAre("tier-2", "tier-1", "tier-0", "accelerator"));
  EXPECT_THAT(d.topology.tiers[2].aliases, ElementsAre("leaf"));
  EXPECT_THAT(d.topology.tiers[1].aliases, ElementsAre("spine"));
  EXPECT_THAT(d.topology.tiers[0].aliases, ElementsAre("core"));
  EXPECT_THAT(d.topology.tiers[3].aliases, ElementsAre("nvlink"));
  EXPECT_THAT(d.summary,
              HasSubstr("also named core = tier-2, spine = tier-1, leaf = tier-0, nvlink"));
  ClusterSpec spec;
  spec.nodes = nodes;
  auto c = Cluster::Build(spec, d.topology);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->LevelByName("leaf"), c->LevelByName("tier-0"));
  EXPECT_EQ(c->LevelByName("spine"), c->LevelByName("tier-1"));
  EXPECT_EQ(c->LevelByName("nvlink"), c->LevelByName("accelerator"));
  EXPECT_GT(c->LevelByName("leaf"), 0);
  EXPECT_EQ(c->LevelByName("rack"), -1);
  // Topograph before v1 names its tiers spine and leaf itself: nothing to alias there.
  std::vector<NodeSpec> old;
  for (int i = 0; i < 4; ++i) {
    old.push_back(Node(i, {{"network.topology.nvidia.com/spine", "s0"},
                           {"network.topology.nvidia.com/leaf", absl::StrCat("l", i / 2)}}));
  }
  TopologyDetection o = Detect(old);
  for (const TierSpec& t : o.topology.tiers) EXPECT_THAT(t.aliases, IsEmpty()) << t.name;
}

TEST(LabelFamily, OldTopographKeepsOnlyTheTiersSomeNodeCarries) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(Node(i, {{"network.topology.nvidia.com/spine", "sp1"},
                             {"network.topology.nvidia.com/leaf", absl::StrCat("leaf", i / 2)}}));
  }
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "topograph");
  EXPECT_THAT(TierNames(d), ElementsAre("spine", "leaf"));
  EXPECT_EQ(d.topology.node_bandwidth_gbps, 7200);
}

TEST(LabelFamily, MixPicksTheFamilyOfMostGpuNodesAndReportsTheRest) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 12; ++i) nodes.push_back(Node(i, V1(i)));
  for (int i = 12; i < 15; ++i) {
    nodes.push_back(Node(i, {{"topology.k8s.aws/network-node-layer-1", "nn-1"},
                             {"topology.k8s.aws/network-node-layer-2", "nn-2"},
                             {"topology.k8s.aws/network-node-layer-3", "nn-3"}}));
  }
  nodes.push_back(Node(15, {{"kubernetes.io/hostname", "gpu-015"}}));
  nodes.push_back(Node(16, {{"topology.k8s.aws/network-node-layer-1", "cpu"}}, 0));  // CPU node
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "topograph-v1");
  EXPECT_EQ(d.gpu_nodes, 16) << "CPU nodes are not looked at";
  EXPECT_EQ(d.matching_nodes, 12);
  EXPECT_THAT(d.summary, HasSubstr("also carried, not used: aws on 3"));
  ASSERT_EQ(d.reports.size(), 1u);
  EXPECT_THAT(d.reports[0], HasSubstr("4 of 16 GPU nodes carry no topograph-v1 labels"));
  EXPECT_THAT(d.reports[0], HasSubstr("3 carry aws (gpu-012, gpu-013, gpu-014)"));
  EXPECT_THAT(d.reports[0], HasSubstr("1 carry none (gpu-015)"));

  // Never merged: each node without the family is its own domain at every tier.
  auto c = Cluster::Build(ClusterSpec{"mix", nodes, std::nullopt}, d.topology);
  ASSERT_TRUE(c.ok()) << c.status();
  for (const char* name : {"gpu-012", "gpu-015"}) {
    int n = c->FindNode(name);
    ASSERT_GE(n, 0);
    int top = c->AncestorAt(c->NodeDomain(n), 1);
    EXPECT_TRUE(c->domain(top).unknown) << name;
    EXPECT_EQ(c->FreeHealthy(top), 8) << name << " shares no tier-2 domain";
  }
}

TEST(LabelFamily, OverlapCountsEveryFamilyANodeCarriesAndTiesGoToPrecedence) {
  // EKS with Topograph on some nodes: AWS labels on all 6, v1 on 4 -> AWS covers every node.
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 6; ++i) {
    Labels l = i < 4 ? V1(i) : Labels{};
    l["topology.k8s.aws/network-node-layer-1"] = "nn-1";
    nodes.push_back(Node(i, l));
  }
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "aws");
  EXPECT_THAT(d.reports, IsEmpty());
  EXPECT_THAT(d.summary, HasSubstr("also carried, not used: topograph-v1 on 4"));
  // On every node both: Topograph v1 comes first.
  for (int i = 4; i < 6; ++i) {
    for (auto& [k, v] : V1(i)) nodes[i].labels[k] = v;
  }
  EXPECT_EQ(Detect(nodes).family, "topograph-v1");
}

TEST(LabelFamily, CliqueAloneOrNothingAtAll) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(Node(i, {{"nvidia.com/gpu.clique", "u.1"}}));
  nodes.push_back(Node(4, {}));
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "gpu-clique");
  EXPECT_THAT(TierNames(d), ElementsAre("nvlink"));
  EXPECT_TRUE(d.topology.tiers[0].optional) << "an HGX node without it is its own domain";
  ASSERT_EQ(d.reports.size(), 1u);
  EXPECT_THAT(d.reports[0], HasSubstr("only NVLink domains are known"));

  std::vector<NodeSpec> bare = {Node(0, {}), Node(1, {{"kubernetes.io/hostname", "x"}})};
  d = Detect(bare);
  EXPECT_EQ(d.family, "");
  EXPECT_THAT(d.topology.tiers, IsEmpty());
  EXPECT_THAT(d.summary, HasSubstr("no tiers (one flat cluster)"));
  ASSERT_EQ(d.reports.size(), 1u);
  EXPECT_THAT(d.reports[0], HasSubstr("none of the 2 GPU nodes carries labels of a known family"));

  d = Detect({Node(0, V1(0), 0)});
  EXPECT_EQ(d.gpu_nodes, 0);
  EXPECT_THAT(d.summary, HasSubstr("no GPU nodes yet"));
  EXPECT_THAT(d.reports, IsEmpty()) << "nothing is wrong before GPU nodes join";
}

TEST(LabelFamily, HostileKeysAreIgnoredAndReportedNeverATier) {
  std::vector<NodeSpec> nodes;
  Labels l = V1(0, 1);
  l["fabric.topograph.run/tier-15"] = "top";  // the highest number read
  for (const char* bad :
       {"fabric.topograph.run/tier-16", "fabric.topograph.run/tier-99999999999",
        "fabric.topograph.run/tier-", "fabric.topograph.run/tier-x",
        "fabric.topograph.run/tier-007", "topology.k8s.aws/network-node-layer-0"}) {
    l[bad] = "v";
  }
  l[std::string("fabric.topograph.run/tier-") + std::string(10000, '9')] = "v";
  nodes.push_back(Node(0, l));
  TopologyDetection d = Detect(nodes);
  EXPECT_EQ(d.family, "topograph-v1");
  EXPECT_THAT(TierNames(d), ElementsAre("tier-15", "tier-0"));
  ASSERT_EQ(d.reports.size(), 1u);
  EXPECT_THAT(d.reports[0], HasSubstr("ignored labels with no usable tier number"));
  EXPECT_LT(d.reports[0].size(), 1000u) << "long keys are cut";
}

TEST(LabelFamily, ConfigValuesApplyOverTheDetectedFamily) {
  auto yaml = YamlParse("{preset: auto, cluster_oversubscription: 7, node_bandwidth_gbps: 3600}",
                        "cfg.yaml");
  ASSERT_TRUE(yaml.ok());
  auto base = ParseTopologyConfig(*yaml, "cfg.yaml");
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_TRUE(base->detect);
  EXPECT_TRUE(base->node_bandwidth_given);
  Labels l = V1(0);
  l["accelerator.topograph.run/domain"] = "nvl0";
  TopologyDetection d = DetectTopology({Node(0, l)}, *base);
  EXPECT_EQ(d.topology.cluster_oversubscription, 7);
  EXPECT_EQ(d.topology.node_bandwidth_gbps, 3600) << "written in the config: kept";
}

TEST(LabelFamily, ShippedFamilyExamplesAreDetectedCleanly) {
  for (auto [file, family] : {std::pair{"topograph-v1", "topograph-v1"}, std::pair{"aws-p5", "aws"},
                              std::pair{"gke-a3-ultra", "gke"}, std::pair{"oci-gb200", "oci"}}) {
    std::string path = testing::SourceDir() + "/examples/clusters/" + file + ".yaml";
    auto text = ReadFileToString(path);
    ASSERT_TRUE(text.ok()) << text.status();
    auto spec = ParseClusterFile(*text, path);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_FALSE(spec->topology.has_value()) << file << ": no topology section, on purpose";
    TopologyDetection d = Detect(spec->nodes);
    EXPECT_EQ(d.family, family) << file;
    EXPECT_EQ(d.matching_nodes, d.gpu_nodes) << file;
    EXPECT_THAT(d.reports, IsEmpty()) << file;
    std::vector<std::string> warnings;
    ASSERT_TRUE(Cluster::Build(*spec, d.topology, &warnings).ok()) << file;
    EXPECT_THAT(warnings, IsEmpty()) << file;
  }
}

TEST(LabelFamily, IsFamilyLabel) {
  for (const char* k :
       {"fabric.topograph.run/tier-3", "accelerator.topograph.run/sub-domain",
        "network.topology.nvidia.com/leaf", "topology.k8s.aws/network-node-layer-4",
        "cloud.google.com/gce-topology-host", "oci.oraclecloud.com/rdma.hpc_island_id",
        "nvidia.com/gpu.clique", "oci.oraclecloud.com/host.rack_id"}) {
    EXPECT_TRUE(IsFamilyLabel(k)) << k;
  }
  for (const char* k : {"fabric.topograph.run/tier-x", "topology.kubernetes.io/zone",
                        "nvidia.com/gpu.product", "oci.oraclecloud.com/rdma.host_id"}) {
    EXPECT_FALSE(IsFamilyLabel(k)) << k;
  }
}

}  // namespace
}  // namespace topogang
