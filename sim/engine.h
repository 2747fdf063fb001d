// The discrete-event simulation of one policy on one trace: arrivals, completions, node
// failures/drains (from the trace or a seeded rate) and the communication model. Pure: no I/O,
// no clocks; the same inputs give the same result.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/metrics.h"
#include "sim/policy.h"
#include "sim/trace.h"
#include "topology/cluster.h"

namespace topogang::sim {

// How a placement becomes run time: `proxy` stretches by the planner's own span bandwidth
// (sim/comm_model.h); `network` by the time of an all-reduce on the placement's actual links
// (sim/network_model.h), independent of what the planner optimises.
enum class CommModel { kProxy, kNetwork };

// What the policies are told about run times (GangSpec::runtime_estimate, Slurm's time limits).
enum class Estimates {
  kTrace,  // the trace's estimate_s where given (users' estimates), nothing elsewhere
  kExact,  // every job's true run time on its ideal placement: the upper bound for backfill
  kNone,   // none at all
};

struct SimOptions {
  uint64_t seed = 1;
  CommModel comm_model = CommModel::kNetwork;
  Estimates estimates = Estimates::kTrace;
  // `network` only: a running job shares switch uplinks with the other jobs running, in
  // proportion to their GPUs under each switch, instead of each GPU getting its fully loaded
  // share. The share, and so the job's speed, changes whenever a job using the same uplinks
  // starts or ends. Idle fabrics get faster, busy ones no slower than fully loaded.
  bool uplink_contention = false;
  // Random node failures per node per day (0: only the trace's events), each lasting repair_s.
  double failure_rate_per_node_day = 0;
  double repair_s = 4 * 3600;
  // Work a job loses when a failure interrupts it (since its last checkpoint, plus restart),
  // whether it is requeued or repaired in place.
  double restart_cost_s = 600;
  double rendezvous_timeout_s = 600;     // `default` policy only
  double locality_patience_s = -1;       // `topogang` only: see PolicyContext
  double required_tier_max_wait_s = -1;  // `topogang` only: see PolicyContext
  QueueOverrides queue;                  // `topogang` only: QueueOptions overrides
  QueueOptions queue_base;               // `topogang` only: see PolicyContext
  std::map<std::string, absl::Duration> required_tier_max_wait_by_tier;  // the same
  bool repair_in_place_always = false;  // `topogang` only: see PolicyContext
  // When to photograph occupancy by leaf; < 0: the midpoint of the trace's arrivals.
  double snapshot_at_s = -1;
  // `topogang` only, issue #13 (see PolicyContext). The policy name may also switch them on:
  // "topogang+preempt", "topogang+elastic", "topogang+spares" and combinations
  // (sim/policy_features.h), so one run can compare them side by side.
  bool preemption = false;
  bool elastic = false;
  bool spares = false;
  int spares_per_domain = 1;  // with `spares`
  std::string spare_tier;     // "" = the tier right above the nodes
  // A job with a member on a node a trace @slow event marks slow runs this many times slower
  // (one slow rank paces every step of a synchronous job). `avoid_slow` (or a policy name
  // "topogang+avoid-slow"): topogang's queue keeps gangs of 64+ GPUs off slow nodes
  // (scheduler/job_exclusion.h, fed by scheduler/node_slowness.h).
  double slow_factor = 1.5;
  bool avoid_slow = false;
  // Seconds an elastic job makes no progress after it grows (its launcher re-forms the group
  // from a checkpoint taken for the resize, so no work is lost).
  double elastic_resize_s = 60;
  // kube-scheduler's binding time (sim/pod_line.h): a started gang runs, and counts as
  // started, once its pods are bound at this many pods/s behind those of earlier starts; those
  // of a gang that did not start when the policy first saw it are retried after bind_retry_s.
  // 0: at once. Applies to every policy of the run.
  double bind_pods_per_s = 0;
  double bind_retry_s = 10;
  // The workload controller's pod creation (sim/pod_line.h): a job reaches the policy once its
  // pods exist, created at this many pods/s for all jobs together, in arrival order. 0: at once.
  double pods_created_per_s = 0;
};

// The gangs the policies see for the trace's jobs (name, shape, tiers, GPU model, priority, and
// the run-time estimate `opt.estimates` says). InvalidArgument naming the line for a tier or GPU
// model the cluster does not have.
absl::StatusOr<std::vector<SimJob>> MakeSimJobs(const Cluster& cluster, const Trace& trace,
                                                const SimOptions& opt);

absl::StatusOr<PolicyResult> Simulate(const Cluster& cluster, const Trace& trace,
                                      const std::string& policy, const SimOptions& options);

}  // namespace topogang::sim
