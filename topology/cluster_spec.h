// The input description of a cluster: nodes with labels, GPU count and SKU. Produced by cluster
// files (CLI, simulator) or by the daemon from Kubernetes Nodes; turned into a Cluster model.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "topology/topology_config.h"

namespace topogang {

inline constexpr int kMaxGpusPerNode = 128;
inline constexpr int kMaxNodes = 200000;

struct NodeSpec {
  std::string name;
  int gpus = 0;
  std::string sku;  // GPU model, e.g. "H100-80GB"; "" means unknown (its own SKU class)
  std::map<std::string, std::string> labels;
};

struct ClusterSpec {
  std::string name;
  std::vector<NodeSpec> nodes;
  // Topology from the cluster file, used when no config file overrides it.
  std::optional<TopologyConfig> topology;
};

// Duplicate or empty node names, GPU counts outside [0, kMaxGpusPerNode], too many nodes.
absl::Status ValidateClusterSpec(const ClusterSpec& spec);

}  // namespace topogang
