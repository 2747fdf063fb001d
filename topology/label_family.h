// Which topology label family a cluster's GPU nodes carry, and the tiers built from it. Used
// when no tiers are configured (`preset: auto`, the default): a cluster's nodes already say where
// they sit (NVIDIA Topograph, a cloud's own labels), so topogang reads that instead of asking
// the operator to restate it. docs/bring-your-own-cluster.md lists every label and rule.
//
// Families, in precedence order (a tie in node count goes to the earlier one):
//   topograph-v1  fabric.topograph.run/tier-N (N = 0 nearest the node; as many tiers as the
//                 nodes carry), accelerator.topograph.run/domain, .../sub-domain
//   topograph     network.topology.nvidia.com/{core,spine,leaf,accelerator} (Topograph < 1.0)
//   aws           topology.k8s.aws/network-node-layer-N (N = 1 widest; 3 or 4 layers),
//                 topology.k8s.aws/ultraserver-id
//   gke           cloud.google.com/gce-topology-{block,subblock,host}
//   oci           oci.oraclecloud.com/rdma.{hpc_island_id,network_block_id,local_block_id},
//                 oci.oraclecloud.com/host.gpu_memory_fabric_id
// nvidia.com/gpu.clique (GPU operator) is the NVLink domain when the family has none of its own
// on any node, and the only tier when no node carries a family.
//
// A mix is never merged: the family carried by the most GPU nodes wins, and every GPU node
// without it is reported (the cluster model then isolates it as an unknown(...) domain).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "topology/cluster_spec.h"
#include "topology/topology_config.h"

namespace topogang {

struct TopologyDetection {
  std::string family;       // "topograph-v1", ..., "gpu-clique"; "" when nothing was found
  TopologyConfig topology;  // resolved: `detect` is false, tiers widest first
  std::string summary;      // one line for the log: what was chosen, from how many nodes
  // One line each: GPU nodes that lack the chosen family, ignored labels. Empty when clean.
  std::vector<std::string> reports;
  int gpu_nodes = 0;       // nodes with gpus > 0 (the only ones looked at)
  int matching_nodes = 0;  // of those, the ones carrying the chosen family
};

// Detects from the GPU nodes of `nodes` and builds the tiers. `base` supplies the cluster
// bandwidth and oversubscription (and the node bandwidth when `node_bandwidth_given`). Never
// fails: with no family and no clique label the result has no tiers (one flat cluster) and says
// so in `reports`.
TopologyDetection DetectTopology(const std::vector<NodeSpec>& nodes, const TopologyConfig& base);

// True for a label key some family is recognised by: a change to such a label can change what
// DetectTopology picks (a watcher still undecided rebuilds on it).
bool IsFamilyLabel(absl::string_view key);

}  // namespace topogang
