// The cluster a load tool runs on: --cluster (default: the 100,000-GPU example) and --config;
// nullopt, said on stderr, when it cannot be loaded.
#pragma once

#include <iostream>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "common/args.h"
#include "config/loader.h"

namespace topogang {

inline std::optional<std::pair<LoadedCluster, Cluster>> LoadClusterArg(const Args& args) {
  auto loaded = LoadClusterFiles(args.Get("cluster", "examples/clusters/hyperscale-100k.yaml"),
                                 args.Get("config"));
  absl::StatusOr<Cluster> cluster =
      loaded.ok() ? BuildCluster(*loaded) : absl::StatusOr<Cluster>(loaded.status());
  if (!cluster.ok()) {
    std::cerr << cluster.status().message() << "\n";
    return std::nullopt;
  }
  return std::make_pair(std::move(*loaded), std::move(*cluster));
}

}  // namespace topogang
