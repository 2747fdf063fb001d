#include "cli/live_cluster.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "config/config_file.h"
#include "daemon/binder.h"
#include "daemon/daemon_state.h"
#include "daemon/gang_ledger.h"
#include "kube/group_objects_watch.h"
#include "kube/kube_client.h"
#include "kube/kube_config.h"
#include "kube/kube_sync.h"
#include "topology/topology_config.h"

namespace topogang::cli {

std::string DefaultKubeconfigPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    for (absl::string_view p : absl::StrSplit(env, ':', absl::SkipEmpty())) return std::string(p);
  }
  const char* home = std::getenv("HOME");
  return absl::StrCat(home ? home : "", "/.kube/config");
}

absl::StatusOr<LiveCluster> ReadLiveCluster(const LiveClusterOptions& options) {
  TopogangConfig config;
  if (!options.config_file.empty()) {
    auto text = ReadFileToString(options.config_file);
    if (!text.ok()) return text.status();
    auto parsed = ParseConfigFile(*text, options.config_file);
    if (!parsed.ok()) return parsed.status();
    config = std::move(*parsed);
  }
  TopologyConfig topology;
  if (config.topology) {
    topology = *config.topology;
  } else {
    auto preset = PresetTopology("auto");  // tiers detected from the node labels, as topogangd
    if (!preset.ok()) return preset.status();
    topology = *preset;
  }
  const std::string path = DefaultKubeconfigPath(options.kubeconfig);
  auto kc = LoadKubeconfig(path);
  if (!kc.ok()) return kc.status();
  kc->program = "topogang";  // User-Agent: the CLI, not topogangd
  auto empty = Cluster::Build(ClusterSpec{}, topology);
  if (!empty.ok()) return empty.status();

  SystemClock clock;
  DaemonState state(GangScheduler(std::move(*empty), config.scheduler), clock);
  MemoryBinder binder;  // never used: the snapshot makes no reservation
  GangLedgerOptions lo;
  lo.gpu_resource = options.gpu_resource;
  GangLedger ledger(state, binder, lo);
  GroupObjectsWatchOptions go;
  go.gpu_resource = options.gpu_resource;
  GroupObjectsWatch groups(std::make_shared<KubeClient>(*kc), go);
  ledger.SetGroupLookup(&groups);
  auto client = std::make_shared<KubeClient>(*kc);
  KubeSync sync(client, state, topology, options.gpu_resource);
  sync.Attach(&ledger, nullptr);
  // Group objects first, so bound members regroup into the gangs their PodGroup/JobSet names.
  groups.Start();
  const bool groups_synced = groups.WaitSynced(options.timeout);
  sync.Start();
  const bool synced = sync.WaitSynced(options.timeout);
  sync.Stop();
  groups.Stop();
  if (!synced) {
    return absl::DeadlineExceededError(
        absl::StrCat("could not list the Nodes and Pods of ", kc->server, " within ",
                     absl::FormatDuration(options.timeout), " (kubeconfig ", path, ")"));
  }
  if (!groups_synced) {
    std::cerr << "topogang: warning: the group objects (PodGroups, JobSets, ...) of " << kc->server
              << " were not all listed in time; bound pods of such gangs count as single pods\n";
  }
  return LiveCluster{state.With([](GangScheduler& s) { return s; }), kc->server,
                     ledger.GetStats().running_gangs};
}

}  // namespace topogang::cli
