// What one wake costs topogangd on a large cluster (run by hand; figures in docs/benchmarks.md).
//
// A wake (a Node annotation: docs/extender.md, "Waking waiting pods") is a cluster event to
// kube-scheduler, and every pod an extender refused goes back to its queue on any event: each
// is filtered once more, and refused again unless its gang can start. This tool builds that herd
// in-process (no HTTP: the daemon's CPU only): a cluster file's nodes all busy but `--free`,
// spread evenly; `--gangs` waiting gangs of `--members` pods x 8 GPUs, each larger than the free
// room, every pod refused once (parked); then every parked pod filtered once more, as one wake
// makes kube-scheduler do, timed per filter.
//
//   wake_herd --cluster examples/clusters/hyperscale-100k.yaml --gangs 16 --members 256 --free 200
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/cluster_arg.h"
#include "common/args.h"
#include "config/loader.h"
#include "daemon/daemon_state.h"
#include "daemon/gang_ledger.h"
#include "extender/extender_service.h"
#include "extender/wire_types.h"

namespace topogang {
namespace {

class NoBinder : public Binder {
 public:
  absl::Status Bind(const PodBinding&) override { return absl::OkStatus(); }
};

// A member pod of gang `gang` (8 GPUs), as kube-scheduler sends it.
Json MemberPod(int gang, int member, int members) {
  Json pod = Json::parse(R"({"metadata":{"namespace":"default","labels":{},"annotations":{}},
    "spec":{"containers":[{"name":"main","image":"trainer","resources":{
      "limits":{"nvidia.com/gpu":"8"},"requests":{"nvidia.com/gpu":"8"}}}],
      "schedulerName":"default-scheduler"},"status":{"phase":"Pending"}})");
  pod["metadata"]["name"] = absl::StrCat("w", gang, "-", member);
  pod["metadata"]["uid"] = absl::StrCat("uid-w", gang, "-", member);
  pod["metadata"]["labels"]["topogang.io/gang"] = absl::StrCat("w", gang);
  pod["metadata"]["annotations"]["topogang.io/gang-size"] = std::to_string(members);
  return pod;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

int Main(int argc, char** argv) {
  auto args =
      ParseArgs(argc, argv, 1, {"cluster", "config", "gangs", "members", "free", "rounds"}, {});
  if (!args.ok()) {
    std::cerr << args.status().message() << "\n";
    return 2;
  }
  int gangs = 16, members = 256, free_nodes = 200, rounds = 1;
  for (auto [flag, out] : {std::pair{"gangs", &gangs}, std::pair{"members", &members},
                           std::pair{"free", &free_nodes}, std::pair{"rounds", &rounds}}) {
    if (args->Has(flag) && (!absl::SimpleAtoi(args->Get(flag), out) || *out < 1)) {
      std::cerr << "--" << flag << " must be a positive integer\n";
      return 2;
    }
  }
  auto both = LoadClusterArg(*args);
  if (!both) return 2;
  LoadedCluster* loaded = &both->first;
  Cluster* cluster = &both->second;
  const int nodes = cluster->num_nodes();
  if (free_nodes >= nodes || members <= free_nodes) {
    std::cerr << "need --free below the node count (" << nodes
              << ") and --members above --free (a waiting gang must not fit)\n";
    return 2;
  }
  SystemClock clock;
  DaemonState state(GangScheduler(std::move(*cluster), loaded->config.scheduler), clock);
  NoBinder binder;
  GangLedgerOptions options;
  options.queue_pass = absl::ZeroDuration();  // only the filters run the queue here
  GangLedger ledger(state, binder, options);
  ExtenderService service(ledger);

  // Every node busy but `free_nodes`, spread evenly (running one-node jobs, as adopted pods are).
  std::vector<std::string> offered;
  std::vector<int> keep;
  for (int i = 0; i < free_nodes; ++i)
    keep.push_back(static_cast<int>(int64_t{i} * nodes / free_nodes));
  absl::Status filled = state.With([&](GangScheduler& s) -> absl::Status {
    for (int n : keep) offered.push_back(s.cluster().node(n).name);
    const std::vector<int> masked = s.MaskNodes(keep);
    for (int n = 0; n < nodes - free_nodes; ++n) {
      GangSpec job;
      job.name = absl::StrCat("busy-", n);
      job.gpus_per_member = s.cluster().node(n).gpus;
      if (auto r = s.Reserve(job, clock.Now()); !r.ok()) return r.status();
      if (absl::Status c = s.Commit(job.name); !c.ok()) return c;
    }
    s.UnmaskNodes(masked);
    return absl::OkStatus();
  });
  if (!filled.ok()) {
    std::cerr << "filling the cluster: " << filled.message() << "\n";
    return 1;
  }

  // kube-scheduler offers each pod the nodes with 8 free GPUs: the free ones.
  auto filter_all = [&](std::vector<double>* ms) {
    int placed = 0;
    for (int g = 0; g < gangs; ++g) {
      for (int m = 0; m < members; ++m) {
        ExtenderArgs a;
        a.pod = MemberPod(g, m, members);
        a.names = offered;
        auto t0 = std::chrono::steady_clock::now();
        ExtenderFilterResult r = service.Filter(a);
        auto t1 = std::chrono::steady_clock::now();
        placed += r.node_names.empty() ? 0 : 1;
        if (ms) ms->push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    }
    return placed;
  };
  auto t0 = std::chrono::steady_clock::now();
  const int placed_first = filter_all(nullptr);
  const double park_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "cluster=%d nodes, %d free; %d waiting gangs x %d pods x 8 GPUs; parking them: %.2f s"
      " (%d placed)\n",
      nodes, free_nodes, gangs, members, park_s, placed_first);
  for (int round = 1; round <= rounds; ++round) {
    std::vector<double> ms;
    auto start = std::chrono::steady_clock::now();
    const int placed = filter_all(&ms);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "wake %d: %zu parked pods filtered again in %.2f s (%.0f/s); per filter ms: "
        "p50=%.3f p99=%.3f max=%.3f; placed %d\n",
        round, ms.size(), secs, ms.size() / secs, Percentile(ms, 0.5), Percentile(ms, 0.99),
        ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end()), placed);
  }
  return 0;
}

}  // namespace
}  // namespace topogang

int main(int argc, char** argv) { return topogang::Main(argc, argv); }
