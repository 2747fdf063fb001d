// What the simulator asks of a scheduling policy. A policy owns its view of the cluster (a
// Cluster, or for topogang the daemon's GangScheduler), its queue, and its placement logic; the
// engine owns time, job progress and metrics.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/gang.h"
#include "scheduler/placement.h"
#include "scheduler/queue_policy.h"
#include "sim/trace.h"
#include "topology/cluster.h"

namespace topogang::sim {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

struct SimJob {
  const TraceJob* trace = nullptr;
  GangSpec gang;  // name = trace id
};

// Experiment overrides of the daemon's QueueOptions (scheduler/queue_policy.h) for the
// `topogang` policy; a negative value keeps the daemon's default.
struct QueueOverrides {
  double starvation_s = -1;
  int hold_min_gpus = -1;
  int max_holds = -1;
  double claim_factor = -1;
  int whole_member_holds = -1;  // 0/1
  int claim_order = -1;         // ClaimOrder
  double hold_ready_fraction = -1;
  double hold_max_shortfall = -1;
  double hold_timeout_s = -1;
  int hold_when_backfill_blocks = -1;  // 0/1
  int order = -1;                      // QueueOrder
  int backfill_into_holds = -1;        // 0/1
  double hold_horizon_s = -1;
  int hold_domain_soonest = -1;   // 0/1
  int keep_claim_clear = -1;      // 0/1
  int large_gangs_in_order = -1;  // 0/1
  double large_in_order_min_share = -1;
  double large_in_order_overload_backlog = -1;
  double large_in_order_overload_memory_s = -1;
  double thin_side_patience_s = -1;
};

struct PolicyContext {
  const std::vector<SimJob>* jobs = nullptr;
  // Seconds the job would still run if started now on `members` (communication model applied).
  std::function<double(int job, const std::vector<MemberPlacement>& members)> run_time;
  uint64_t seed = 1;
  // `default` only: a partially placed gang gives its pods back after waiting this long (the
  // rendezvous timeout of the training launcher), so two half-placed gangs cannot deadlock.
  double rendezvous_timeout_s = 600;
  // `topogang` only: QueueOptions::locality_patience in seconds (< 0: the daemon's default).
  double locality_patience_s = -1;
  // `topogang` only: GangSpec::required_tier_max_wait in seconds for every gang whose required
  // tier is a switch tier (< 0: never lapses). An NVLink-domain requirement is kept, as Slurm
  // never gives up topology/block's --segment.
  double required_tier_max_wait_s = -1;
  // `topogang` only: the daemon's queue options (scheduler/queue_policy.h), defaults unless set.
  QueueOverrides queue;
  // `topogang` only: what a config file's daemon section sets (config/queue_config.h, `simulate
  // --config`): the queue options the overrides above apply to, and per tier the required-tier
  // wait of gangs that give none (matched by level; required_tier_max_wait_s, when set, wins
  // for the switch tiers).
  QueueOptions queue_base;
  std::map<std::string, absl::Duration> required_tier_max_wait_by_tier;
  // `topogang` only: how the simulator acts on the scheduler's replacement proposals. By
  // default a failure-hit gang is repaired in place only when it already runs at its ideal
  // bandwidth and the repair keeps that; otherwise it is requeued and re-planned whole (a
  // restart from checkpoint either way). true: repair whenever the repair keeps the bandwidth.
  bool repair_in_place_always = false;
  // `topogang` only, the policies of issue #13 (off by default; docs/placement-quality.md):
  // a waiting gang may evict whole gangs of lower priority (scheduler/preemption.h);
  bool preemption = false;
  // gangs with a trace `min_members` start at it and grow inside their start domain
  // (scheduler/elastic.h);
  bool elastic = false;
  // hot spares: spares_per_domain idle nodes per domain of spare_tier ("" = the tier above
  // the nodes) replace a failed member at once (scheduler/spares.h).
  int spares_per_domain = 0;
  std::string spare_tier;
  // slow nodes: gangs of at least slow_gang_gpus GPUs avoid them (scheduler/job_exclusion.h).
  bool avoid_slow = false;
  long slow_gang_gpus = 64;
};

struct Started {
  int job = -1;
  std::vector<MemberPlacement> members;
};

// What a node going down did to running jobs.
struct HealthResult {
  std::vector<int> killed;  // released; the engine requeues them with their remaining work
  std::vector<std::pair<int, std::vector<MemberPlacement>>> moved;  // repaired in place
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  virtual const Cluster& cluster() const = 0;
  // The job waits from now on.
  virtual void Enqueue(int job, double now) = 0;
  // Starts what the policy starts now; every returned job has all its members placed.
  virtual std::vector<Started> Schedule(double now) = 0;
  // A running job completed: free its GPUs.
  virtual void Finish(int job) = 0;
  // down=true: the node leaves service. fail=true: running work on it is lost (fail), else it
  // is only cordoned (drain). down=false: the node is back.
  virtual HealthResult SetNodeDown(int node, bool down, bool fail, double now) = 0;
  // Earliest time the policy wants Schedule called again without any other event.
  virtual double NextWakeup() const { return kNever; }
  // GPUs held by gangs that are not running yet (only `default` ever has any).
  virtual long HeldIdleGpus() const { return 0; }
  // Running jobs the last Schedule evicted for a higher-priority gang: whole gangs, already
  // released. The engine stops them (work since the checkpoint is lost) and requeues them.
  virtual std::vector<int> TakePreempted() { return {}; }
  // Running elastic jobs the last Schedule grew, each with its whole new member list.
  virtual std::vector<Started> TakeGrown() { return {}; }
  // The node turned slow (or back to speed): what NodeSlowness would learn from its agent.
  virtual void SetNodeSlow(int /*node*/, bool /*slow*/, double /*now*/) {}
  // Free GPUs on hot spare nodes (kept idle for failures).
  virtual long SpareIdleGpus() const { return 0; }
};

std::vector<std::string> PolicyNames();
// Builds a policy on its own copy of `cluster`. `options` is used by topogang.
absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name, const Cluster& cluster,
                                                   PolicyContext ctx);

}  // namespace topogang::sim
