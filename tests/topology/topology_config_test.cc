#include "topology/topology_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/yaml_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<TopologyConfig> Parse(const std::string& text) {
  auto n = YamlParse(text, "cfg.yaml");
  if (!n.ok()) return n.status();
  return ParseTopologyConfig(*n, "cfg.yaml");
}

TEST(TopologyConfig, PresetsUseRealLabels) {
  EXPECT_EQ(PresetTopology("topograph")->tiers[2].label, "network.topology.nvidia.com/leaf");
  EXPECT_EQ(PresetTopology("aws")->tiers[0].label, "topology.k8s.aws/network-node-layer-1");
  EXPECT_EQ(PresetTopology("gke")->tiers[0].label, "cloud.google.com/gce-topology-block");
  EXPECT_EQ(PresetTopology("gb200")->tiers.back().label, "nvidia.com/gpu.clique");
  EXPECT_FALSE(PresetTopology("slurm").ok());
  EXPECT_EQ(PresetTopology("topograph-v1")->tiers[2].label, "fabric.topograph.run/tier-0");
  EXPECT_EQ(PresetTopology("topograph-v1")->tiers[3].label, "accelerator.topograph.run/domain");
  EXPECT_EQ(PresetTopology("oci")->tiers[0].label, "oci.oraclecloud.com/rdma.hpc_island_id");
  EXPECT_TRUE(PresetTopology("auto")->detect);
  EXPECT_TRUE(PresetTopology("auto")->tiers.empty());
  EXPECT_FALSE(PresetTopology("topograph")->detect);
}

// Every preset's narrowest network tier answers to "leaf" (its own name or an alias), so one
// jobs file works on any of them; oci-host reads OCI's host.* keys.
TEST(TopologyConfig, EveryPresetHasALeafByNameOrAlias) {
  for (const std::string& name : PresetNames()) {
    if (name == "auto") continue;
    auto t = PresetTopology(name);
    ASSERT_TRUE(t.ok()) << name;
    int leaves = 0;
    for (const TierSpec& tier : t->tiers) {
      leaves += tier.name == "leaf" ||
                std::find(tier.aliases.begin(), tier.aliases.end(), "leaf") != tier.aliases.end();
    }
    EXPECT_EQ(leaves, 1) << name;
  }
  EXPECT_EQ(PresetTopology("oci-host")->tiers[1].label, "oci.oraclecloud.com/host.rack_id");
}

TEST(TopologyConfig, AutoIsTheDefaultAndNamedTiersNeverDetect) {
  auto c = Parse("cluster_oversubscription: 7");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->detect);
  EXPECT_EQ(c->preset, "auto");
  EXPECT_FALSE(c->node_bandwidth_given);
  EXPECT_EQ(c->cluster_oversubscription, 7);
  c = Parse("{preset: auto, node_bandwidth_gbps: 3600}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->detect && c->node_bandwidth_given);
  c = Parse("{preset: auto, tiers: [{name: rack, label: my/rack}]}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->detect);
  EXPECT_FALSE(Parse("{preset: topograph}")->detect);
  EXPECT_THAT(Parse("{preset: nope}").status().message(), HasSubstr("auto, topograph-v1"));
}

TEST(TopologyConfig, CustomTiersReplacePreset) {
  auto c = Parse(R"(
preset: aws
node_bandwidth_gbps: 3600
cluster_oversubscription: 7
tiers:
  - {name: spine, label: my/spine, bandwidth_gbps: 200, oversubscription: 2}
  - {name: rack, label: my/rack, optional: true}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->tiers.size(), 2u);
  EXPECT_EQ(c->tiers[0].oversubscription, 2);
  EXPECT_TRUE(c->tiers[1].optional);
  EXPECT_EQ(c->tiers[1].bandwidth_gbps, 400);
  EXPECT_EQ(c->node_bandwidth_gbps, 3600);
  EXPECT_EQ(c->cluster_oversubscription, 7);
}

TEST(TopologyConfig, BadInputsAreClearErrors) {
  EXPECT_THAT(Parse("tiers: [{name: node, label: x}]").status().message(), HasSubstr("'node'"));
  EXPECT_THAT(Parse("tiers: [{name: a, label: x}, {name: a, label: y}]").status().message(),
              HasSubstr("duplicate tier name 'a'"));
  EXPECT_THAT(Parse("tiers: [{name: a, label: x}, {name: b, label: x}]").status().message(),
              HasSubstr("duplicate tier label"));
  EXPECT_THAT(Parse("tiers: [{name: a, label: x, oversubscription: 0.5}]").status().message(),
              HasSubstr("oversubscription: must be between 1"));
  EXPECT_THAT(Parse("tiers: [{name: a, label: x, bandwidth_gbps: nan}]").status().message(),
              HasSubstr("expected a number"));
  EXPECT_THAT(Parse("tiers: {a: 1}").status().message(), HasSubstr("expected a list"));
  EXPECT_THAT(Parse("tier: []").status().message(), HasSubstr("unknown key 'tier'"));
}

}  // namespace
}  // namespace topogang
