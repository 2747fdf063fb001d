// Which node labels define the network hierarchy, and what bandwidth each tier gives a GPU.
// Tiers are listed from the widest (e.g. core between islands) to the narrowest (e.g. the NVLink
// domain); the node itself is always the implicit last tier.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

struct TierSpec {
  std::string name;   // "spine", "leaf", ... (used in gang constraints and reports)
  std::string label;  // node label whose value names the node's domain at this tier
  // Per-GPU bandwidth (Gbit/s) of traffic whose farthest hop is a switch of this tier, before
  // oversubscription. Physical units so a score reads as "about 57 Gb/s per GPU".
  double bandwidth_gbps = 400;
  // Oversubscription of this tier (7 means 7:1); effective bandwidth = bandwidth / ratio.
  double oversubscription = 1;
  // When a node lacks this label: optional tiers make the node its own domain silently (an HGX
  // node is its own NVLink domain); required tiers do the same but report the node.
  bool optional = false;
  // Other names a gang constraint may use for this tier. Detected families get the generic
  // leaf/spine/core/nvlink (topology/label_family.h), so one jobs file works on every cluster.
  std::vector<std::string> aliases = {};
};

struct TopologyConfig {
  std::string preset;  // which preset (or detected label family) this started from, for reports
  std::vector<TierSpec> tiers;
  // Between GPUs of one node (NVLink 4: 900 GB/s = 7200 Gb/s).
  double node_bandwidth_gbps = 7200;
  // Between domains of the top tier (e.g. between islands): per-GPU bandwidth and its
  // oversubscription. Meta's 24k-GPU RoCE clusters: 400 Gb/s at 7:1 between AI zones.
  double cluster_bandwidth_gbps = 400;
  double cluster_oversubscription = 1;
  // `preset: auto` (the default): the tiers depend on which label family the nodes carry, so
  // they are left empty here and filled by DetectTopology (label_family.h) once nodes are known.
  bool detect = false;
  // With `detect`: node_bandwidth_gbps was written in the config and wins over the family's
  // default (NVL72-class domains raise it).
  bool node_bandwidth_given = false;
};

// Presets for labels that exist in the wild (docs/bring-your-own-cluster.md has the sources):
//   auto          detect the family from the nodes' labels (label_family.h); the default
//   topograph-v1  NVIDIA Topograph >= 1.0: fabric.topograph.run/tier-{2,1,0},
//                 accelerator.topograph.run/{domain,sub-domain}
//   topograph     NVIDIA Topograph < 1.0: network.topology.nvidia.com/{core,spine,leaf,accelerator}
//   aws           topology.k8s.aws/network-node-layer-{1,2,3}
//   gke           cloud.google.com/gce-topology-{block,subblock,host}
//   oci           oci.oraclecloud.com/rdma.{hpc_island_id,network_block_id,local_block_id},
//                 oci.oraclecloud.com/host.gpu_memory_fabric_id
//   gb200         Topograph spine/leaf + nvidia.com/gpu.clique (GPU operator) as the NVLink domain
// A fixed preset reads a fixed number of tiers; `auto` reads as many as the nodes carry.
absl::StatusOr<TopologyConfig> PresetTopology(absl::string_view name);
std::vector<std::string> PresetNames();

// Parses a `topology:` mapping (preset, node_bandwidth_gbps, cluster_bandwidth_gbps,
// cluster_oversubscription, tiers). `source` names the file in error messages. Without a preset
// and without tiers the result asks for detection (`auto`); explicit tiers never do.
absl::StatusOr<TopologyConfig> ParseTopologyConfig(const YAML::Node& node,
                                                   absl::string_view source);

}  // namespace topogang
