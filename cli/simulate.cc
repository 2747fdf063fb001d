// Over 500 lines: one command's flag table, parsing and output; the logic lives in sim/.
#include "cli/simulate.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/placement_format.h"
#include "common/args.h"
#include "common/file_util.h"
#include "config/loader.h"
#include "config/queue_config.h"
#include "sim/engine.h"
#include "sim/feature_report.h"
#include "sim/generator.h"
#include "sim/jct_bound.h"
#include "sim/job_classes.h"
#include "sim/metrics.h"
#include "sim/network_model.h"
#include "sim/policy.h"
#include "sim/report.h"
#include "sim/svg.h"
#include "sim/trace_features.h"
#include "topology/nvlink_tier.h"

namespace topogang::cli {
namespace {

const char kHelp[] =
    R"(usage: topogang simulate --cluster FILE (--trace FILE | --generate N) [options]

Discrete-event simulation of a job trace against scheduling policies on a cluster file.
Each job is a gang (members x GPUs per member); its run time is stretched by the bandwidth
of its placement (communication model, docs/placement-quality.md).

  --cluster FILE          cluster file (examples/clusters/*.yaml)
  --config FILE           topogang config (topology tiers, bandwidths); the queue keys of its
                          daemon section (large_gangs_in_order, required_tier_max_wait_seconds,
                          ...: docs/configuration.md) set the topogang policy's queue as they
                          set topogangd's; the --queue-* flags override them
  --trace FILE            trace CSV (docs/traces.md)
  --policy A,B,...        policies (default: all): default, gang-firstfit, kueue-tas,
                          slurm-tree, volcano-hypernode, topogang; topogang with the policies
                          of issue #13: topogang+preempt (higher priority evicts whole gangs),
                          topogang+elastic (trace min_members: start at the minimum, grow in
                          the start domain), topogang+spares, or combined (topogang+preempt+spares)
  --spares N              spare nodes per domain for +spares (default 1)
  --spare-tier T          the tier spares are counted in (default: the one above the nodes)
  --elastic-resize-cost S seconds an elastic job pauses when it grows (default 60)
  --bind-pods-per-s R     a started gang runs only once kube-scheduler's one loop has bound
                          its pods at R pods/s, behind earlier starts' pods (default 0: at once)
  --bind-retry-s S        with --bind-pods-per-s: seconds before the pods of a gang that waited
                          (refused before) are tried again (backoff; default 10, the most)
  --pods-created-per-s R  a job reaches the policies once its controller has created its pods
                          at R pods/s, one controller for all jobs (default 0: at once; 20 is
                          kube-controller-manager's default --kube-api-qps)
  --slow-factor F         how much slower a job with a member on a slow node (@slow) runs
                          (default 1.5); topogang+avoid-slow keeps gangs of 64+ GPUs off them
  --out DIR               write summary.csv, jobs-<policy>.csv, jct-cdf.svg, occupancy.svg
  --seed N                seed for random failures and tie-breaking (default 1)
  --failure-rate X        random node failures per node per day (default 0)
  --repair-hours H        how long a failed node stays down (default 4)
  --restart-cost S        work a failure costs a running job: since its last checkpoint,
                          plus restart (default 600)
  --rendezvous-timeout S  'default' policy: seconds a partial gang holds its pods (default 600)
  --snapshot-at S         time of the occupancy picture (default: middle of the arrivals)
  --comm-model network|proxy  how a placement becomes run time: network (default) by the
                          all-reduce time on the placement's links (docs/network-model.md);
                          proxy stretches by the planner's own span bandwidth
  --estimates trace|exact|none  run-time estimates the policies see (topogang's queue, Slurm's
                          time limits): the trace's estimate_s (default), every job's true run
                          time (the upper bound), or none
  --uplink-contention     with --comm-model network: a running job shares switch uplinks with
                          the other jobs using them (its speed changes as they start and end)
                          instead of getting its fully loaded share
  --locality-patience S   topogang only: QueueOptions::locality_patience in seconds (a gang
                          below --queue-hold-min-gpus that could start only below its shape's
                          best bandwidth waits up to S for better; 0 = off)
  --required-tier-max-wait S  topogang only: every gang's switch-tier requirement (leaf, spine,
                          ...; not an NVLink domain) lapses after S seconds of waiting
                          (GangSpec::required_tier_max_wait, the topogang.io/required-tier-max-wait
                          annotation, or daemon.required_tier_max_wait_seconds for the
                          whole cluster): Slurm's --switches=N@max-time, as slurm-tree-best
                          models it with max_switch_wait = 300 (default: never lapses)
  --queue-starvation-minutes M, --queue-hold-min-gpus N, --queue-max-holds N,
  --queue-claim-factor X, --queue-whole-member-holds 0|1, --queue-claim-order
  most-free|fewest-gangs|soonest-free, --queue-hold-ready-fraction F,
  --queue-hold-max-shortfall F, --queue-hold-timeout-minutes M (0 = never),
  --queue-hold-when-backfill-blocks 0|1, --queue-hold-domain-soonest 0|1,
  --queue-keep-claim-clear 0|1, --queue-thin-side-patience-minutes M (0 = off),
  --queue-order arrival|smallest, --queue-backfill-into-holds 0|1,
  --queue-hold-horizon-minutes M (0 = off), --queue-large-in-order 0|1,
  --queue-large-in-order-min-share F, --queue-large-in-order-overload-backlog F (0 = off),
  --queue-large-in-order-overload-memory-hours H
                          topogang only: override the daemon's GangQueue options
  --repair-in-place-always  topogang only: repair every failure-hit gang in place when the
                          repair keeps its bandwidth (default: requeue and re-plan gangs that
                          run below their ideal bandwidth; docs/placement-quality.md)

Trace generation (docs/traces.md):
  --generate N            generate N jobs sized for --cluster instead of reading --trace
  --profile mixed|llm|nvl72  job-size mix (default mixed); nvl72: gangs of whole trays, those
                          that fit an NVLink domain ask for it (required 70 %, preferred 30 %)
  --load X                offered load (default 0.9)
  --max-job-gpus N        largest job (default: a quarter of the cluster)
  --trace-failures X      write @fail rows at X failures per node per day
  --correlated-failures C share of those failure events that take a whole domain down at once
                          (default 0)
  --failure-group TIER    the domain a correlated failure takes down (default: the NVLink tier
                          if the cluster has one, else the leaf)
  --estimate-share S      share of jobs that carry a run-time estimate (default 0.5)
  --high-priority-share S share of the jobs of >= --high-priority-min-gpus GPUs (default 64)
                          given priority 100 (for topogang+preempt)
  --elastic-share S       share of the jobs of two nodes or more made elastic, min_members =
                          half their members (for topogang+elastic)
  --slow-node-share S     share of the nodes made slow for the whole trace (@slow rows)
  --write-trace FILE      save the generated trace; without --policy, only that is done
  --lower-bound           also print a lower bound on the mean JCT that no scheduler can beat
                          on this trace and cluster (sim/jct_bound.h: ideal placements, one
                          fluid pool of GPUs, SRPT), each policy's mean JCT over it, and with
                          --out write bound.csv
  --lower-bound-max-wait-256 S|best  the same bound under a promise that every gang of >= 256
                          GPUs starts within S seconds of its arrival; `best`: within the
                          shortest longest-256+ wait of the baselines run, the policies not
                          named topogang* (implies --lower-bound)
)";

bool ParseDouble(const Args& a, const std::string& k, double def, double lo, double hi,
                 double* out) {
  if (!a.Has(k)) {
    *out = def;
    return true;
  }
  if (!absl::SimpleAtod(a.Get(k), out) || !(*out >= lo && *out <= hi)) {
    std::cerr << "topogang simulate: --" << k << " must be a number in [" << lo << ", " << hi
              << "], got '" << a.Get(k) << "'\n";
    return false;
  }
  return true;
}

bool WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) {
    std::cerr << "topogang simulate: cannot write " << p.string() << "\n";
    return false;
  }
  return true;
}

std::string Duration(double s) {
  if (s < 120) return absl::StrFormat("%.0fs", s);
  if (s < 7200) return absl::StrFormat("%.1fm", s / 60);
  return absl::StrFormat("%.1fh", s / 3600);
}

// Prints lower bounds no scheduler beats, over the jobs the runs counted, and each policy's
// figure over them: the mean JCT (sim/jct_bound.h), without a promise and, when `max_wait_256`
// is >= 0, with every 256+ gang started within it; the p95 JCT, at least the p95 of the jobs'
// durations since no job ends before its own. Returns bound.csv's text.
std::string LowerBounds(const Cluster& cluster, const sim::Trace& trace,
                        const std::vector<sim::PolicyResult>& results, double max_wait_256) {
  std::vector<sim::BoundJob> jobs;
  std::vector<double> durations;
  for (size_t i = 0; i < trace.jobs.size() && i < results[0].jobs.size(); ++i) {
    if (results[0].jobs[i].unschedulable) continue;
    jobs.push_back({trace.jobs[i].arrival_s, trace.jobs[i].total_gpus(), trace.jobs[i].duration_s});
    durations.push_back(trace.jobs[i].duration_s);
  }
  const double p95 = sim::Percentile(durations, 0.95);
  std::string csv = "max_wait_256_s,mean_jct_lower_bound_s,p95_jct_lower_bound_s\n";
  std::cout << "\nLower bounds, any scheduler (ideal placements; the mean: one fluid pool of "
            << cluster.num_gpus()
            << " GPUs under SRPT, sim/jct_bound.h), and each policy over them:\n";
  std::cout << "  p95 JCT (the durations' p95): " << Duration(p95)
            << absl::StrFormat(" (%.1f s)", p95);
  for (const sim::PolicyResult& r : results) {
    if (p95 > 0) std::cout << absl::StrFormat("; %s %.3fx", r.policy, r.summary.p95_jct / p95);
  }
  std::cout << "\n";
  for (double w : {std::numeric_limits<double>::infinity(), max_wait_256}) {
    if (w < 0) continue;
    sim::JctBoundOptions o;
    o.large_max_wait_s = w;
    const std::string promise =
        std::isinf(w) ? "no promise" : "every 256+ gang started within " + Duration(w);
    auto b = sim::MeanJctLowerBound(jobs, cluster.num_gpus(), o);
    if (!b.ok()) {
      std::cout << "  mean JCT, " << promise << ": " << b.status().message() << "\n";
      continue;
    }
    absl::StrAppend(&csv, std::isinf(w) ? "inf" : absl::StrFormat("%.1f", w), ",",
                    absl::StrFormat("%.1f,%.1f", *b, p95), "\n");
    std::cout << "  mean JCT, " << promise << ": " << Duration(*b)
              << absl::StrFormat(" (%.1f s)", *b);
    for (const sim::PolicyResult& r : results) {
      if (*b > 0) std::cout << absl::StrFormat("; %s %.3fx", r.policy, r.summary.mean_jct / *b);
    }
    std::cout << "\n";
  }
  return csv;
}

}  // namespace

int RunSimulate(int argc, char** argv) {
  auto args = ParseArgs(argc, argv, 2,
                        {"cluster",
                         "config",
                         "trace",
                         "policy",
                         "out",
                         "seed",
                         "failure-rate",
                         "repair-hours",
                         "restart-cost",
                         "rendezvous-timeout",
                         "snapshot-at",
                         "comm-model",
                         "estimates",
                         "locality-patience",
                         "required-tier-max-wait",
                         "queue-starvation-minutes",
                         "queue-hold-min-gpus",
                         "queue-max-holds",
                         "queue-claim-factor",
                         "queue-whole-member-holds",
                         "queue-claim-order",
                         "queue-hold-ready-fraction",
                         "queue-hold-domain-soonest",
                         "queue-keep-claim-clear",
                         "queue-large-in-order",
                         "queue-large-in-order-min-share",
                         "queue-large-in-order-overload-backlog",
                         "queue-large-in-order-overload-memory-hours",
                         "queue-thin-side-patience-minutes",
                         "queue-hold-max-shortfall",
                         "queue-hold-timeout-minutes",
                         "queue-hold-when-backfill-blocks",
                         "queue-order",
                         "queue-backfill-into-holds",
                         "queue-hold-horizon-minutes",
                         "generate",
                         "profile",
                         "load",
                         "max-job-gpus",
                         "trace-failures",
                         "correlated-failures",
                         "failure-group",
                         "estimate-share",
                         "write-trace",
                         "spares",
                         "spare-tier",
                         "elastic-resize-cost",
                         "bind-pods-per-s",
                         "bind-retry-s",
                         "pods-created-per-s",
                         "high-priority-share",
                         "high-priority-min-gpus",
                         "elastic-share",
                         "slow-node-share",
                         "slow-factor",
                         "lower-bound-max-wait-256"},
                        {"help", "repair-in-place-always", "uplink-contention", "lower-bound"});
  if (!args.ok()) {
    std::cerr << "topogang simulate: " << args.status().message() << "\n\n" << kHelp;
    return 2;
  }
  if (args->Has("help")) {
    std::cout << kHelp;
    return 0;
  }
  if (!args->positional.empty()) {
    std::cerr << "topogang simulate: unexpected argument '" << args->positional[0] << "'\n";
    return 2;
  }
  if (!args->Has("cluster") || (args->Has("trace") == args->Has("generate"))) {
    std::cerr << "topogang simulate: --cluster and exactly one of --trace, --generate are "
                 "required\n\n"
              << kHelp;
    return 2;
  }
  auto loaded = LoadClusterFiles(args->Get("cluster"), args->Get("config"));
  if (!loaded.ok()) {
    std::cerr << "topogang simulate: " << loaded.status().message() << "\n";
    return 2;
  }
  auto cluster = BuildCluster(*loaded);
  if (!cluster.ok()) {
    std::cerr << "topogang simulate: " << args->Get("cluster") << ": " << cluster.status().message()
              << "\n";
    return 2;
  }
  for (const std::string& w : loaded->warnings) std::cerr << "warning: " << w << "\n";
  // The config's daemon section sets the queue topogangd runs; the `topogang` policy runs the
  // same one (the --queue-* flags and --required-tier-max-wait still override it).
  DaemonQueueConfig daemon_queue;
  const std::string config_source = args->Get("config", args->Get("cluster"));
  if (absl::Status s = ParseDaemonQueueConfig(loaded->config.daemon, config_source, daemon_queue);
      !s.ok()) {
    std::cerr << "topogang simulate: " << s.message() << "\n";
    return 2;
  }
  for (const auto& [tier, wait] : daemon_queue.required_tier_max_wait) {
    if (cluster->LevelByName(tier) < 0) {
      std::cerr << "topogang simulate: " << config_source
                << ": daemon.required_tier_max_wait_seconds: '" << tier
                << "' is not a tier of the cluster\n";
      return 2;
    }
  }

  double q_starve, q_min, q_holds, q_claim, q_whole, q_ready, q_short, q_timeout, q_bf, q_soonest,
      q_clear, q_in_order, q_in_order_share, q_overload, q_overload_h, q_thin, q_bf_holds,
      q_horizon;
  sim::CommModel comm_model = sim::CommModel::kNetwork;
  sim::Estimates estimates = sim::Estimates::kTrace;
  if (args->Has("estimates")) {
    const std::string e = args->Get("estimates");
    if (e != "trace" && e != "exact" && e != "none") {
      std::cerr << "topogang simulate: --estimates must be trace, exact or none, got '" << e
                << "'\n";
      return 2;
    }
    estimates = e == "exact"  ? sim::Estimates::kExact
                : e == "none" ? sim::Estimates::kNone
                              : sim::Estimates::kTrace;
  }
  if (args->Has("comm-model")) {
    const std::string m = args->Get("comm-model");
    if (m != "proxy" && m != "network") {
      std::cerr << "topogang simulate: --comm-model must be proxy or network, got '" << m << "'\n";
      return 2;
    }
    comm_model = m == "network" ? sim::CommModel::kNetwork : sim::CommModel::kProxy;
  }
  int q_order = -1;
  if (args->Has("queue-claim-order")) {
    const std::string order = args->Get("queue-claim-order");
    if (order != "most-free" && order != "fewest-gangs" && order != "soonest-free") {
      std::cerr << "topogang simulate: --queue-claim-order must be most-free, fewest-gangs or "
                   "soonest-free, got '"
                << order << "'\n";
      return 2;
    }
    q_order = order == "most-free" ? 0 : order == "fewest-gangs" ? 1 : 2;
  }
  int q_queue_order = -1;
  if (args->Has("queue-order")) {
    const std::string order = args->Get("queue-order");
    if (order != "arrival" && order != "smallest") {
      std::cerr << "topogang simulate: --queue-order must be arrival or smallest, got '" << order
                << "'\n";
      return 2;
    }
    q_queue_order = order == "smallest" ? 1 : 0;
  }
  double seed_d, restart_cost, failure_rate, repair_h, rdzv, snapshot, patience, load,
      trace_failures, gen_n, max_gpus, correlated, estimate_share, spares, resize_cost, bind_rate,
      bind_retry, create_rate, hi_share, hi_min, el_share, slow_share, slow_factor, tier_wait,
      bound_wait;
  if (!ParseDouble(*args, "seed", 1, 0, 1e15, &seed_d) ||
      !ParseDouble(*args, "failure-rate", 0, 0, 100, &failure_rate) ||
      !ParseDouble(*args, "restart-cost", 600, 0, 1e7, &restart_cost) ||
      !ParseDouble(*args, "repair-hours", 4, 0, 24 * 365, &repair_h) ||
      !ParseDouble(*args, "rendezvous-timeout", 600, 1, 1e7, &rdzv) ||
      !ParseDouble(*args, "snapshot-at", -1, -1, 1e9, &snapshot) ||
      !ParseDouble(*args, "locality-patience", -1, 0, 1e9, &patience) ||
      !ParseDouble(*args, "required-tier-max-wait", -1, 0, 1e9, &tier_wait) ||
      !ParseDouble(*args, "queue-starvation-minutes", -1, -1, 1e7, &q_starve) ||
      !ParseDouble(*args, "queue-hold-min-gpus", -1, -1, 1e7, &q_min) ||
      !ParseDouble(*args, "queue-max-holds", -1, -1, 1e6, &q_holds) ||
      !ParseDouble(*args, "queue-claim-factor", -1, -1, 100, &q_claim) ||
      !ParseDouble(*args, "queue-whole-member-holds", -1, -1, 1, &q_whole) ||
      !ParseDouble(*args, "queue-hold-ready-fraction", -1, -1, 1, &q_ready) ||
      !ParseDouble(*args, "queue-hold-max-shortfall", -1, -1, 1, &q_short) ||
      !ParseDouble(*args, "queue-hold-timeout-minutes", -1, -1, 1e7, &q_timeout) ||
      !ParseDouble(*args, "queue-hold-when-backfill-blocks", -1, -1, 1, &q_bf) ||
      !ParseDouble(*args, "queue-hold-domain-soonest", -1, -1, 1, &q_soonest) ||
      !ParseDouble(*args, "queue-keep-claim-clear", -1, -1, 1, &q_clear) ||
      !ParseDouble(*args, "queue-large-in-order", -1, -1, 1, &q_in_order) ||
      !ParseDouble(*args, "queue-large-in-order-min-share", -1, 0, 1, &q_in_order_share) ||
      !ParseDouble(*args, "queue-large-in-order-overload-backlog", -1, 0, 100, &q_overload) ||
      !ParseDouble(*args, "queue-large-in-order-overload-memory-hours", -1, 0, 720,
                   &q_overload_h) ||
      !ParseDouble(*args, "queue-thin-side-patience-minutes", -1, -1, 1e7, &q_thin) ||
      !ParseDouble(*args, "queue-backfill-into-holds", -1, -1, 1, &q_bf_holds) ||
      !ParseDouble(*args, "queue-hold-horizon-minutes", -1, -1, 1e7, &q_horizon) ||
      !ParseDouble(*args, "load", 0.9, 0.01, 10, &load) ||
      !ParseDouble(*args, "trace-failures", 0, 0, 100, &trace_failures) ||
      !ParseDouble(*args, "correlated-failures", 0, 0, 1, &correlated) ||
      !ParseDouble(*args, "estimate-share", 0.5, 0, 1, &estimate_share) ||
      !ParseDouble(*args, "generate", 0, 0, sim::kMaxTraceJobs, &gen_n) ||
      !ParseDouble(*args, "max-job-gpus", 0, 0, 1e7, &max_gpus) ||
      !ParseDouble(*args, "spares", 1, 1, 1e6, &spares) ||
      !ParseDouble(*args, "elastic-resize-cost", 60, 0, 1e7, &resize_cost) ||
      !ParseDouble(*args, "bind-pods-per-s", 0, 0, 1e6, &bind_rate) ||
      !ParseDouble(*args, "bind-retry-s", 10, 0, 3600, &bind_retry) ||
      !ParseDouble(*args, "pods-created-per-s", 0, 0, 1e6, &create_rate) ||
      !ParseDouble(*args, "high-priority-share", 0, 0, 1, &hi_share) ||
      !ParseDouble(*args, "high-priority-min-gpus", 64, 1, 1e7, &hi_min) ||
      !ParseDouble(*args, "elastic-share", 0, 0, 1, &el_share) ||
      !ParseDouble(*args, "slow-node-share", 0, 0, 1, &slow_share) ||
      !ParseDouble(*args, "slow-factor", 1.5, 1, 100, &slow_factor)) {
    return 2;
  }
  const uint64_t seed = static_cast<uint64_t>(seed_d);

  sim::Trace trace;
  std::string trace_name;
  if (args->Has("trace")) {
    trace_name = args->Get("trace");
    auto text = ReadFileToString(trace_name);
    if (!text.ok()) {
      std::cerr << "topogang simulate: " << text.status().message() << "\n";
      return 2;
    }
    auto parsed = sim::ParseTraceCsv(*text, trace_name);
    if (!parsed.ok()) {
      std::cerr << "topogang simulate: " << parsed.status().message() << "\n";
      return 2;
    }
    trace = std::move(*parsed);
  } else {
    sim::GeneratorOptions g;
    g.jobs = static_cast<int>(gen_n);
    g.seed = seed;
    g.profile = args->Get("profile", "mixed");
    g.cluster_gpus = cluster->num_gpus();
    g.load = load;
    g.max_job_gpus = static_cast<long>(max_gpus);
    g.gpus_per_node = cluster->max_gpus_per_node();
    const int leaf = sim::LeafLevel(*cluster), spine = sim::SpineLevel(*cluster);
    g.leaf_tier = cluster->LevelName(leaf);
    g.spine_tier = spine > 0 ? cluster->LevelName(spine) : g.leaf_tier;
    g.spine_gpus = spine > 0 ? cluster->MaxDomainGpus(spine) : 0;
    g.failures_per_node_day = trace_failures;
    g.repair_s = repair_h * 3600;
    g.estimate_share = estimate_share;
    g.correlated_share = correlated;
    for (int n = 0; n < cluster->num_nodes() && trace_failures > 0; ++n) {
      g.node_names.push_back(cluster->node(n).name);
    }
    // The NVLink tier (nvl72 gangs ask for it; correlated failures take a rack down).
    const int nvlink = NvlinkDomainLevel(*cluster);
    if (nvlink > 0) {
      g.nvlink_tier = cluster->LevelName(nvlink);
      g.nvlink_gpus = cluster->MaxDomainGpus(nvlink);
    } else if (g.profile == "nvl72") {
      std::cerr << "topogang simulate: --profile nvl72 needs a cluster with an NVLink tier\n";
      return 2;
    }
    int group = nvlink > 0 ? nvlink : leaf;
    if (args->Has("failure-group")) {
      group = cluster->LevelByName(args->Get("failure-group"));
      if (group <= 0 || group >= cluster->node_level()) {
        std::cerr << "topogang simulate: --failure-group: no tier '" << args->Get("failure-group")
                  << "' above the nodes\n";
        return 2;
      }
    }
    if (correlated > 0 && trace_failures > 0) {
      for (int d = cluster->LevelBegin(group); d < cluster->LevelEnd(group); ++d) {
        std::vector<std::string> nodes;
        for (int n = cluster->domain(d).node_begin; n < cluster->domain(d).node_end; ++n) {
          nodes.push_back(cluster->node(n).name);
        }
        g.failure_groups.push_back(std::move(nodes));
      }
    }
    if (cluster->num_skus() > 1) {
      for (int sku = 0; sku < cluster->num_skus(); ++sku) {
        long gpus = 0;
        for (int n = 0; n < cluster->num_nodes(); ++n) {
          if (cluster->node(n).sku == sku) gpus += cluster->node(n).gpus;
        }
        g.skus.emplace_back(cluster->SkuName(sku), gpus);
      }
    }
    auto generated = sim::GenerateTrace(g);
    if (!generated.ok()) {
      std::cerr << "topogang simulate: " << generated.status().message() << "\n";
      return 2;
    }
    trace = std::move(*generated);
    sim::TraceFeatureOptions features;
    features.seed = seed;
    features.high_priority_share = hi_share;
    features.high_priority_min_gpus = static_cast<long>(hi_min);
    features.elastic_share = el_share;
    features.elastic_min_gpus = 2L * cluster->max_gpus_per_node();
    features.slow_node_share = slow_share;
    for (int n = 0; n < cluster->num_nodes() && slow_share > 0; ++n) {
      features.node_names.push_back(cluster->node(n).name);
    }
    sim::AddTraceFeatures(features, &trace);
    trace_name = absl::StrCat("generated(", g.jobs, " jobs, ", g.profile, ", seed ", seed, ")");
    double work = 0, big = 0;
    for (const auto& j : trace.jobs) {
      double w = j.total_gpus() * j.duration_s;
      work += w;
      if (j.total_gpus() >= 256) big += w;
    }
    std::cerr << absl::StrFormat(
        "generated %d jobs over %s, %d node events; gangs of >= 256 GPUs hold %.0f%% of GPU-time\n",
        trace.jobs.size(), Duration(trace.jobs.empty() ? 0 : trace.jobs.back().arrival_s),
        trace.events.size(), work > 0 ? 100 * big / work : 0);
    if (args->Has("write-trace")) {
      std::string flags;  // the options that shape the trace, as given
      for (const char* k :
           {"trace-failures", "correlated-failures", "estimate-share", "high-priority-share",
            "high-priority-min-gpus", "elastic-share", "slow-node-share"}) {
        if (args->Has(k) && (std::string(k) == "estimate-share" || args->Get(k) != "0")) {
          absl::StrAppend(&flags, " --", k, " ", args->Get(k));
        }
      }
      std::string header = absl::StrFormat(
          "# topogang trace: %d jobs, profile %s, seed %d, load %.2f on %s (%d GPUs)\n"
          "# generated by: topogang simulate --cluster %s --generate %d --profile %s --seed %d "
          "--load %.2f%s\n",
          g.jobs, g.profile, seed, load, cluster->name(), cluster->num_gpus(), args->Get("cluster"),
          g.jobs, g.profile, seed, load, flags);
      if (!WriteFile(args->Get("write-trace"), header + sim::WriteTraceCsv(trace))) return 1;
      if (!args->Has("policy")) return 0;
    }
  }

  std::vector<std::string> policies;
  if (args->Has("policy")) {
    for (absl::string_view p : absl::StrSplit(args->Get("policy"), ',', absl::SkipEmpty())) {
      policies.emplace_back(p);
    }
  } else {
    policies = sim::PolicyNames();
  }
  sim::SimOptions opt;
  opt.seed = seed;
  opt.comm_model = comm_model;
  opt.estimates = estimates;
  opt.uplink_contention = args->Has("uplink-contention");
  opt.failure_rate_per_node_day = failure_rate;
  opt.repair_s = repair_h * 3600;
  opt.restart_cost_s = restart_cost;
  opt.rendezvous_timeout_s = rdzv;
  opt.snapshot_at_s = snapshot;
  opt.locality_patience_s = patience;
  opt.required_tier_max_wait_s = tier_wait;
  opt.queue_base = daemon_queue.queue;
  // The flags override the config's keys, so the refused combination is checked on the result.
  if (const std::string why = QueueOptions::OverloadBacklogProblem(
          q_overload >= 0 ? q_overload : daemon_queue.queue.large_in_order_overload_backlog,
          q_in_order_share >= 0 ? q_in_order_share : daemon_queue.queue.large_in_order_min_share,
          "--queue-large-in-order-min-share");
      !why.empty()) {
    std::cerr << "topogang simulate: --queue-large-in-order-overload-backlog " << why << "\n";
    return 2;
  }
  if (args->Has("bind-retry-s") && bind_rate <= 0) {
    std::cerr << "topogang simulate: --bind-retry-s needs --bind-pods-per-s above 0 (without "
                 "it pods bind at once, with no retry to wait for)\n";
    return 2;
  }
  opt.required_tier_max_wait_by_tier = daemon_queue.required_tier_max_wait;
  opt.repair_in_place_always = args->Has("repair-in-place-always");
  opt.spares_per_domain = static_cast<int>(spares);
  opt.spare_tier = args->Get("spare-tier", "");
  opt.elastic_resize_s = resize_cost;
  opt.bind_pods_per_s = bind_rate;
  opt.bind_retry_s = bind_retry;
  opt.pods_created_per_s = create_rate;
  opt.slow_factor = slow_factor;
  opt.queue.starvation_s = q_starve < 0 ? -1 : q_starve * 60;
  opt.queue.hold_min_gpus = static_cast<int>(q_min);
  opt.queue.max_holds = static_cast<int>(q_holds);
  opt.queue.claim_factor = q_claim;
  opt.queue.whole_member_holds = static_cast<int>(q_whole);
  opt.queue.claim_order = q_order;
  opt.queue.hold_ready_fraction = q_ready;
  opt.queue.hold_max_shortfall = q_short;
  opt.queue.hold_timeout_s = q_timeout < 0 ? -1 : q_timeout * 60;
  opt.queue.hold_when_backfill_blocks = static_cast<int>(q_bf);
  opt.queue.hold_domain_soonest = static_cast<int>(q_soonest);
  opt.queue.keep_claim_clear = static_cast<int>(q_clear);
  opt.queue.large_gangs_in_order = static_cast<int>(q_in_order);
  opt.queue.large_in_order_min_share = q_in_order_share;
  opt.queue.large_in_order_overload_backlog = q_overload;
  opt.queue.large_in_order_overload_memory_s = q_overload_h < 0 ? -1 : q_overload_h * 3600;
  opt.queue.thin_side_patience_s = q_thin < 0 ? -1 : q_thin * 60;
  if (q_queue_order >= 0) opt.queue.order = q_queue_order;
  if (q_bf_holds >= 0) opt.queue.backfill_into_holds = static_cast<int>(q_bf_holds);
  if (q_horizon >= 0) opt.queue.hold_horizon_s = 60 * q_horizon;

  // "best": the shortest longest-256+ wait among the baselines run (the bar of issue #12).
  const bool bound_wait_best = args->Get("lower-bound-max-wait-256", "") == "best";
  if (!bound_wait_best &&
      !ParseDouble(*args, "lower-bound-max-wait-256", -1, 0, 1e9, &bound_wait)) {
    return 2;
  }

  std::vector<sim::PolicyResult> results;
  std::vector<double> walls;
  for (const std::string& p : policies) {
    const absl::Time t0 = absl::Now();
    auto r = sim::Simulate(*cluster, trace, p, opt);
    if (!r.ok()) {
      std::cerr << "topogang simulate: " << trace_name << ": " << r.status().message() << "\n";
      return 2;
    }
    walls.push_back(absl::ToDoubleSeconds(absl::Now() - t0));
    std::cerr << absl::StrFormat("%s: %.1fs\n", p, walls.back());
    results.push_back(std::move(*r));
  }

  std::cout << absl::StrFormat("cluster %s (%d GPUs), trace %s: %d jobs, %d node events\n\n",
                               cluster->name(), cluster->num_gpus(), trace_name, trace.jobs.size(),
                               trace.events.size());
  Table table({"POLICY", "DONE", "WAIT mean/p95", "JCT mean/p95", "UTIL", "GOODPUT", "1-LEAF",
               "1-SPINE", "BW Gb/s", "IDLE-HELD GPU-h", "FRAG GPUs", "MAX WAIT 256+", "WALL"});
  for (size_t i = 0; i < results.size(); ++i) {
    const sim::Summary& s = results[i].summary;
    std::string max_wait = Duration(s.max_wait_256);
    if (s.never_started_256 > 0) absl::StrAppend(&max_wait, " (+", s.never_started_256, " never)");
    table.Add(
        {results[i].policy, absl::StrCat(s.completed, "/", s.jobs),
         absl::StrCat(Duration(s.mean_wait), " / ", Duration(s.p95_wait)),
         absl::StrCat(Duration(s.mean_jct), " / ", Duration(s.p95_jct)),
         absl::StrFormat("%.1f%%", 100 * s.utilization), absl::StrFormat("%.1f%%", 100 * s.goodput),
         absl::StrFormat("%.1f%%", 100 * s.share_one_leaf),
         absl::StrFormat("%.1f%%", 100 * s.share_one_spine),
         absl::StrFormat("%.0f", s.mean_bandwidth), absl::StrFormat("%.0f", s.partial_gpu_hours),
         absl::StrFormat("%.0f (%.0f%%)", s.frag_gpus, 100 * s.frag_share), max_wait,
         absl::StrFormat("%.1fs", walls[i])});
  }
  std::cout << table.Render();
  if (results.size() && results[0].summary.unschedulable > 0) {
    std::cout << results[0].summary.unschedulable
              << " job(s) can never fit this cluster and were left out\n";
  }
  std::cout << "\n" << sim::JobClassTable(*cluster, results);
  for (const std::string& t :
       {sim::PriorityTable(trace, results), sim::ElasticTable(trace, results),
        sim::RecoveryTable(results), sim::SlowNodeTable(trace, results)}) {
    if (!t.empty()) std::cout << "\n" << t;
  }
  std::string bound_csv;
  if (bound_wait_best) {
    bound_wait = -1;
    for (const sim::PolicyResult& r : results) {
      if (r.summary.never_started_256 > 0 || absl::StartsWith(r.policy, "topogang")) continue;
      if (bound_wait < 0 || r.summary.max_wait_256 < bound_wait)
        bound_wait = r.summary.max_wait_256;
    }
  }
  if ((args->Has("lower-bound") || args->Has("lower-bound-max-wait-256")) && !results.empty()) {
    bound_csv = LowerBounds(*cluster, trace, results, bound_wait);
  }

  if (args->Has("out")) {
    std::filesystem::path dir(args->Get("out"));
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      std::cerr << "topogang simulate: cannot create " << dir.string() << ": " << ec.message()
                << "\n";
      return 1;
    }
    if (!WriteFile(dir / "summary.csv", sim::SummaryCsv(results))) return 1;
    if (!bound_csv.empty() && !WriteFile(dir / "bound.csv", bound_csv)) return 1;
    for (const auto& r : results) {
      if (!WriteFile(dir / ("jobs-" + r.policy + ".csv"), sim::JobsCsv(r, *cluster))) return 1;
    }
    const std::string title = absl::StrCat(cluster->name(), ", ", trace_name);
    if (!WriteFile(dir / "jct-cdf.svg", sim::JctCdfSvg(results, "Job completion time: " + title)) ||
        !WriteFile(dir / "occupancy.svg",
                   sim::OccupancySvg(results, "Occupancy by leaf: " + title))) {
      return 1;
    }
    std::cout << "wrote " << dir.string() << "/{summary.csv, jobs-*.csv, jct-cdf.svg, occupancy.svg"
              << (bound_csv.empty() ? "" : ", bound.csv") << "}\n";
  }
  return 0;
}

}  // namespace topogang::cli
