#include "cli/dry_run.h"

#include <iostream>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/live_cluster.h"
#include "cli/placement_format.h"
#include "cli/remote.h"
#include "common/args.h"
#include "common/file_util.h"
#include "config/loader.h"
#include "scheduler/gang_file.h"
#include "scheduler/gang_scheduler.h"

namespace topogang::cli {

const char kDryRunHelp[] = R"(usage: topogang dry-run --cluster FILE --jobs FILE [options]
       topogang dry-run --kubeconfig [FILE] --jobs FILE [options]
       kubectl topogang dry-run --jobs FILE [options]

Places each job (gang) of the jobs file in order, as if every placed job kept
running, and prints where it went or why it did not fit. Needs no daemon.

  --cluster FILE     cluster file (explicit nodes or generator form); no cluster
                     needed
  --kubeconfig FILE  instead: the live cluster's current Nodes and Pods, read once
                     through this kubeconfig (as topogangd reads them: tiers from
                     --config or detected from the node labels, cordons, taints,
                     drains, GPUs held by bound pods); writes nothing. As a kubectl
                     plugin (kubectl-topogang), this is the default, with
                     $KUBECONFIG or ~/.kube/config
  --gpu-resource R   with --kubeconfig: the GPU resource name (nvidia.com/gpu)
  --timeout SECONDS  with --kubeconfig: give up listing after this (default 60)
  --jobs FILE        jobs file: a list of gangs
  --config FILE      topogang config (topology tiers, bandwidths); overrides the
                     cluster file's topology section
  --drain NODE,...   treat these nodes as drained (cordoned) before placing
  --format table|json  output format (default table)
  --verbose          also print each member's node and GPU indices
  --server HOST:PORT ask a running topogangd instead: its live cluster, with
                     --jobs and --drain; see 'topogang gangs --help' for the
                     connection flags (--token-file, --ca, --cert, --key)

Exit status: 0 when the inputs are valid (whether or not every job fits),
2 on bad input.
)";

namespace {

// kubectl runs a plugin `kubectl-topogang` found on PATH for `kubectl topogang ...`.
bool IsKubectlPlugin(const char* argv0) {
  const std::string a = argv0 ? argv0 : "";
  const size_t slash = a.rfind('/');
  return a.substr(slash == std::string::npos ? 0 : slash + 1) == "kubectl-topogang";
}

}  // namespace

int RunDryRun(int argc, char** argv) {
  auto args =
      ParseArgs(argc, argv, 2,
                {"cluster", "jobs", "config", "drain", "format", "server", "token-file", "ca",
                 "cert", "key", "tls-server-name", "timeout", "kubeconfig", "gpu-resource"},
                {"help", "verbose"});
  if (!args.ok()) {
    std::cerr << "topogang dry-run: " << args.status().message() << "\n\n" << kDryRunHelp;
    return 2;
  }
  if (args->Has("help")) {
    std::cout << kDryRunHelp;
    return 0;
  }
  if (args->Has("server")) return RunRemoteDryRun(*args);  // the live daemon's cluster
  const std::string format = args->Get("format", "table");
  if (format != "table" && format != "json") {
    std::cerr << "topogang dry-run: --format must be table or json, got '" << format << "'\n";
    return 2;
  }
  // Invoked as a kubectl plugin (kubectl-topogang), the live cluster is the natural default.
  const bool live = args->Has("kubeconfig") || (!args->Has("cluster") && IsKubectlPlugin(argv[0]));
  if ((!args->Has("cluster") && !live) || !args->Has("jobs")) {
    std::cerr << "topogang dry-run: --jobs and one of --cluster or --kubeconfig are required\n\n"
              << kDryRunHelp;
    return 2;
  }
  if (live && args->Has("cluster")) {
    std::cerr << "topogang dry-run: --cluster and --kubeconfig are exclusive\n";
    return 2;
  }
  std::optional<GangScheduler> live_sched;
  std::optional<LoadedCluster> loaded;
  std::string source = args->Get("cluster");
  if (live) {
    LiveClusterOptions lo;
    lo.kubeconfig = args->Get("kubeconfig", "");
    lo.config_file = args->Get("config", "");
    lo.gpu_resource = args->Get("gpu-resource", lo.gpu_resource);
    int timeout_s = 60;
    if (args->Has("timeout") && (!absl::SimpleAtoi(args->Get("timeout"), &timeout_s) ||
                                 timeout_s < 1 || timeout_s > 3600)) {
      std::cerr << "topogang dry-run: --timeout: expected seconds from 1 to 3600\n";
      return 2;
    }
    lo.timeout = absl::Seconds(timeout_s);
    auto snap = ReadLiveCluster(lo);
    if (!snap.ok()) {
      std::cerr << "topogang dry-run: " << snap.status().message() << "\n";
      return 2;
    }
    source = snap->server;
    std::cerr << "live cluster " << snap->server << ": " << snap->running_gangs
              << " running gangs and GPU pods hold GPUs\n";
    live_sched.emplace(std::move(snap->scheduler));
  } else {
    auto files = LoadClusterFiles(args->Get("cluster"), args->Get("config"));
    if (!files.ok()) {
      std::cerr << "topogang dry-run: " << files.status().message() << "\n";
      return 2;
    }
    loaded = std::move(*files);
  }
  auto jobs_text = ReadFileToString(args->Get("jobs"));
  if (!jobs_text.ok()) {
    std::cerr << "topogang dry-run: " << jobs_text.status().message() << "\n";
    return 2;
  }
  auto jobs = ParseJobsFile(*jobs_text, args->Get("jobs"));
  if (!jobs.ok()) {
    std::cerr << "topogang dry-run: " << jobs.status().message() << "\n";
    return 2;
  }
  if (!live_sched) {
    auto cluster = BuildCluster(*loaded);
    if (!cluster.ok()) {
      std::cerr << "topogang dry-run: " << source << ": " << cluster.status().message() << "\n";
      return 2;
    }
    // Which label family `preset: auto` chose, on stderr so the table stays machine-readable.
    if (!loaded->topology_note.empty()) std::cerr << loaded->topology_note << "\n";
    for (const std::string& w : loaded->warnings) std::cerr << "warning: " << w << "\n";
    live_sched.emplace(*std::move(cluster), loaded->config.scheduler);
  }
  GangScheduler& sched = *live_sched;
  const Cluster& c = sched.cluster();
  if (args->Has("drain")) {
    for (absl::string_view name : absl::StrSplit(args->Get("drain"), ',', absl::SkipEmpty())) {
      int n = c.FindNode(name);
      if (n < 0) {
        std::cerr << "topogang dry-run: --drain: no node named '" << name << "' in " << source
                  << "\n";
        return 2;
      }
      sched.SetNodeCordoned(n, true, absl::UnixEpoch());
    }
  }

  nlohmann::json out = nlohmann::json::array();
  Table table({"GANG", "GPUS", "PLACED", "TIER", "BW(Gb/s)", "SPAN", "NODES / REASON"});
  int placed = 0;
  for (const GangSpec& gang : *jobs) {
    absl::StatusOr<Placement> result = sched.DryRun(gang);
    if (result.ok()) {
      if (absl::Status s = sched.Adopt(gang, *result, GangState::kRunning, absl::UnixEpoch());
          !s.ok()) {
        result = s;  // duplicate name: reported like any other failure
      } else {
        ++placed;
      }
    }
    if (format == "json") {
      out.push_back(PlacementJson(c, gang, result));
      continue;
    }
    if (!result.ok()) {
      table.Add({gang.name, absl::StrCat(gang.total_gpus()), "no", "-", "-", "-",
                 std::string(result.status().message())});
      continue;
    }
    table.Add({gang.name, absl::StrCat(gang.total_gpus()), "yes", c.LevelName(result->level),
               absl::StrFormat("%.0f", result->bandwidth_gbps), DescribeSpan(c, *result),
               CompressNodeList(c, result->Nodes())});
    if (args->Has("verbose")) {
      for (size_t m = 0; m < result->members.size(); ++m) {
        const MemberPlacement& mp = result->members[m];
        std::string gpus;
        for (int g : mp.gpus)
          absl::StrAppend(&gpus, gpus.empty() ? "" : ",", g - c.node(mp.node).gpu_begin);
        table.Add(
            {absl::StrCat("  member ", m), "", "", "", "", c.node(mp.node).name, "gpus " + gpus});
      }
    }
  }
  if (format == "json") {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "cluster " << c.name() << ": " << c.num_nodes() << " nodes, " << c.num_gpus()
            << " GPUs, tiers";
  for (int l = 1; l < c.num_levels(); ++l) std::cout << (l == 1 ? " " : " > ") << c.LevelName(l);
  std::cout << "\n\n" << table.Render();
  std::cout << "\n"
            << placed << " of " << jobs->size() << " gangs placed; " << c.FreeHealthy(0) << " of "
            << c.num_gpus() << " GPUs free and healthy\n";
  return 0;
}

}  // namespace topogang::cli
