// A live cluster's GPUs as a GangScheduler, read once from the API server with no daemon: the
// input of `topogang dry-run --kubeconfig` (and of `kubectl topogang dry-run`).
//
// Why the daemon's own sync and ledger: the snapshot must be exactly what topogangd would see —
// the same tiers (configured or detected from the node labels), cordons and taints, drains kept
// on the Nodes, bound pods regrouped into their gangs (every gang convention topogangd reads) —
// or a dry run would answer a different question than the daemon. Nothing is written: the
// ledger's binder is an in-memory one and no reservation is made.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/gang_scheduler.h"

namespace topogang::cli {

struct LiveClusterOptions {
  std::string kubeconfig;   // path; "" = $KUBECONFIG (its first entry), else ~/.kube/config
  std::string config_file;  // topogang config (topology, scheduler options); "" = detect tiers
  std::string gpu_resource = "nvidia.com/gpu";
  absl::Duration timeout = absl::Seconds(60);  // for the first full list
};

struct LiveCluster {
  GangScheduler scheduler;
  std::string server;     // the API server it was read from
  int running_gangs = 0;  // gangs (and single GPU pods) found bound, holding GPUs
};

absl::StatusOr<LiveCluster> ReadLiveCluster(const LiveClusterOptions& options);

// The kubeconfig kubectl would use: `flag` if set, else the first entry of $KUBECONFIG, else
// $HOME/.kube/config.
std::string DefaultKubeconfigPath(const std::string& flag);

}  // namespace topogang::cli
