#include "topology/topology_config.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/yaml_util.h"

namespace topogang {
namespace {

// NVIDIA Topograph before v1.0 (NVIDIA/topograph docs/reference/node-labels.md at v0.5.0).
constexpr char kTopograph[] = "network.topology.nvidia.com/";
// NVIDIA Topograph v1.0: tier 0 is the switch nearest the node (NVIDIA/topograph
// pkg/topology/topology.go, KeyFabricTierPrefix / KeyTopologyXclrDomain / ...SubDomain).
constexpr char kTopographV1Tier[] = "fabric.topograph.run/tier-";
constexpr char kTopographV1Domain[] = "accelerator.topograph.run/domain";
constexpr char kTopographV1SubDomain[] = "accelerator.topograph.run/sub-domain";
// OKE's RDMA locality labels, widest first (oracle-quickstart/oci-hpc-oke
// docs/using-rdma-network-locality-when-running-workloads-on-oke.md) and the GB200 NVLink
// domain (docs/oci-hpc-oke-utils.md, "GPU Memory Fabric Labels").
constexpr char kOciRdma[] = "oci.oraclecloud.com/rdma.";
constexpr char kOciMemoryFabric[] = "oci.oraclecloud.com/host.gpu_memory_fabric_id";

TierSpec Tier(std::string name, std::string label, double bw, double oversub = 1,
              bool optional = false) {
  return TierSpec{std::move(name), std::move(label), bw, oversub, optional};
}

// The generic names of a family's tiers (as label_family.cc gives detected ones), so a pinned
// preset answers to the same leaf/spine/core/nvlink as `auto`.
TierSpec Also(TierSpec t, std::string alias) {
  t.aliases.push_back(std::move(alias));
  return t;
}

}  // namespace

std::vector<std::string> PresetNames() {
  return {"auto", "topograph-v1", "topograph", "aws", "gke", "oci", "oci-host", "gb200"};
}

absl::StatusOr<TopologyConfig> PresetTopology(absl::string_view name) {
  TopologyConfig c;
  c.preset = std::string(name);
  if (name == "auto") {
    c.detect = true;  // tiers come from DetectTopology once the nodes are known
  } else if (name == "topograph-v1") {
    // Three fabric tiers, the usual depth; `auto` reads however many the nodes carry.
    c.tiers = {Also(Tier("tier-2", absl::StrCat(kTopographV1Tier, 2), 400), "core"),
               Also(Tier("tier-1", absl::StrCat(kTopographV1Tier, 1), 400), "spine"),
               Also(Tier("tier-0", absl::StrCat(kTopographV1Tier, 0), 400), "leaf"),
               Also(Tier("accelerator", kTopographV1Domain, 7200, 1, true), "nvlink"),
               Tier("sub-domain", kTopographV1SubDomain, 7200, 1, true)};
  } else if (name == "oci") {
    c.tiers = {
        Also(Tier("hpc-island", absl::StrCat(kOciRdma, "hpc_island_id"), 400), "core"),
        Also(Tier("network-block", absl::StrCat(kOciRdma, "network_block_id"), 400), "spine"),
        Also(Tier("local-block", absl::StrCat(kOciRdma, "local_block_id"), 400), "leaf"),
        Tier("nvlink", kOciMemoryFabric, 7200, 1, true)};
  } else if (name == "oci-host") {
    c.tiers = {
        Also(Tier("network-block", "oci.oraclecloud.com/host.network_block_id", 400), "spine"),
        Also(Tier("rack", "oci.oraclecloud.com/host.rack_id", 400), "leaf"),
        Tier("nvlink", kOciMemoryFabric, 7200, 1, true)};
  } else if (name == "topograph") {
    // 400 Gb/s per GPU (one ConnectX-7 per GPU); NVLink domain optional: HGX nodes have none.
    c.tiers = {Tier("core", absl::StrCat(kTopograph, "core"), 400),
               Tier("spine", absl::StrCat(kTopograph, "spine"), 400),
               Tier("leaf", absl::StrCat(kTopograph, "leaf"), 400),
               Tier("accelerator", absl::StrCat(kTopograph, "accelerator"), 7200, 1, true)};
  } else if (name == "aws") {
    // EFA on p5: 3200 Gb/s per 8-GPU node = 400 per GPU. Layer 1 is farthest from the node.
    c.tiers = {Also(Tier("layer-1", "topology.k8s.aws/network-node-layer-1", 400), "core"),
               Also(Tier("layer-2", "topology.k8s.aws/network-node-layer-2", 400), "spine"),
               Also(Tier("layer-3", "topology.k8s.aws/network-node-layer-3", 400), "leaf")};
  } else if (name == "gke") {
    c.tiers = {Also(Tier("block", "cloud.google.com/gce-topology-block", 400), "spine"),
               Also(Tier("subblock", "cloud.google.com/gce-topology-subblock", 400), "leaf"),
               Tier("host", "cloud.google.com/gce-topology-host", 400, 1, true)};
  } else if (name == "gb200") {
    // NVL72: 72 GPUs share NVLink 5 (1.8 TB/s = 14400 Gb/s per GPU).
    c.tiers = {Tier("spine", absl::StrCat(kTopograph, "spine"), 400),
               Tier("leaf", absl::StrCat(kTopograph, "leaf"), 400),
               Tier("nvlink", "nvidia.com/gpu.clique", 14400, 1, true)};
    c.node_bandwidth_gbps = 14400;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown topology preset '", name, "' (known: ", absl::StrJoin(PresetNames(), ", "), ")"));
  }
  return c;
}

absl::StatusOr<TopologyConfig> ParseTopologyConfig(const YAML::Node& node,
                                                   absl::string_view source) {
  if (absl::Status s = YamlCheckKeys(node, source,
                                     {"preset", "node_bandwidth_gbps", "cluster_bandwidth_gbps",
                                      "cluster_oversubscription", "tiers"},
                                     "topology");
      !s.ok()) {
    return s;
  }
  auto preset = YamlString(node, "preset", source, std::string("auto"));
  if (!preset.ok()) return preset.status();
  auto config = PresetTopology(*preset);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, node["preset"]), ": ", config.status().message()));
  }
  auto node_bw =
      YamlDouble(node, "node_bandwidth_gbps", source, 1, 1e6, config->node_bandwidth_gbps);
  if (!node_bw.ok()) return node_bw.status();
  config->node_bandwidth_gbps = *node_bw;
  config->node_bandwidth_given =
      node["node_bandwidth_gbps"].IsDefined() && !node["node_bandwidth_gbps"].IsNull();
  auto cluster_bw = YamlDouble(node, "cluster_bandwidth_gbps", source, 0.001, 1e6,
                               config->cluster_bandwidth_gbps);
  if (!cluster_bw.ok()) return cluster_bw.status();
  config->cluster_bandwidth_gbps = *cluster_bw;
  auto cluster_over = YamlDouble(node, "cluster_oversubscription", source, 1, 1000,
                                 config->cluster_oversubscription);
  if (!cluster_over.ok()) return cluster_over.status();
  config->cluster_oversubscription = *cluster_over;

  YAML::Node tiers = node["tiers"];
  if (!tiers.IsDefined() || tiers.IsNull()) return config;
  if (!tiers.IsSequence()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, tiers), ": tiers: expected a list"));
  }
  if (tiers.size() > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, tiers), ": tiers: at most 16 tiers, got ", tiers.size()));
  }
  config->tiers.clear();
  config->detect = false;  // the tiers are named: nothing to detect
  std::set<std::string> names, labels;
  for (size_t i = 0; i < tiers.size(); ++i) {
    const YAML::Node t = tiers[i];
    std::string ctx = absl::StrCat("tiers[", i, "]");
    if (absl::Status s = YamlCheckKeys(
            t, source, {"name", "label", "bandwidth_gbps", "oversubscription", "optional"}, ctx);
        !s.ok()) {
      return s;
    }
    TierSpec spec;
    auto name = YamlString(t, "name", source, std::nullopt);
    auto label = YamlString(t, "label", source, std::nullopt);
    auto bw = YamlDouble(t, "bandwidth_gbps", source, 0.001, 1e6, 400.0);
    auto over = YamlDouble(t, "oversubscription", source, 1, 1000, 1.0);
    auto opt = YamlBool(t, "optional", source, false);
    for (const absl::Status& s :
         {name.status(), label.status(), bw.status(), over.status(), opt.status()}) {
      if (!s.ok()) return s;
    }
    if (name->empty() || *name == "node" || *name == "cluster") {
      return absl::InvalidArgumentError(absl::StrCat(
          YamlWhere(source, t), ": ", ctx, ".name: must be non-empty and not 'node' or 'cluster'"));
    }
    if (label->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(YamlWhere(source, t), ": ", ctx, ".label: must be non-empty"));
    }
    if (!names.insert(*name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(YamlWhere(source, t), ": ", ctx, ": duplicate tier name '", *name, "'"));
    }
    if (!labels.insert(*label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(YamlWhere(source, t), ": ", ctx, ": duplicate tier label '", *label, "'"));
    }
    config->tiers.push_back(Tier(*name, *label, *bw, *over, *opt));
  }
  return config;
}

}  // namespace topogang
