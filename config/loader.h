// Reads a cluster file and an optional config file from disk and builds the model, resolving
// which topology applies: --config's, else the cluster file's, else `auto`; `auto` is resolved
// here from the cluster's node labels (topology/label_family.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config_file.h"
#include "topology/cluster.h"

namespace topogang {

struct LoadedCluster {
  ClusterSpec spec;
  TopogangConfig config;
  TopologyConfig topology;  // the one applied
  std::vector<std::string> warnings;
  std::string topology_note;  // with `auto`: which label family was detected, for logs
};

// config_path may be empty. Errors name the file (and line for content errors).
absl::StatusOr<LoadedCluster> LoadClusterFiles(const std::string& cluster_path,
                                               const std::string& config_path);
// Builds the Cluster of a LoadedCluster (warnings appended to it).
absl::StatusOr<Cluster> BuildCluster(LoadedCluster& loaded);

}  // namespace topogang
