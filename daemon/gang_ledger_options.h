// What a GangLedger is configured with. topogangd's config file maps onto it
// (topogangd/daemon_config.h), which needs the options but not the ledger.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/preemption.h"
#include "scheduler/queue_policy.h"

namespace topogang {

struct GangLedgerOptions {
  std::string gpu_resource = "nvidia.com/gpu";
  // How long one held bind waits for the rest of its gang before it is answered with an error
  // (the member keeps its slot and its arrival; kube-scheduler retries it after its backoff).
  // Must stay below kube-scheduler's extender httpTimeout (5s by default), or the scheduler
  // gives up on the request first. The reservation itself lives as long as members keep
  // arriving (SchedulerOptions::reservation_ttl after the last one).
  absl::Duration bind_window = absl::Seconds(4);
  // Bindings in flight at once (API server calls). A 4,096-member gang binds in 4,096 / this
  // round trips instead of 4,096; kube-scheduler itself binds each pod on its own goroutine.
  // 64: a 1,024-member gang's bindings took 0.39 s instead of 1.05 s at 16 (bench/gang_e2e).
  int bind_parallelism = 64;
  // How often the worker answers held binds past their window.
  absl::Duration tick = absl::Milliseconds(100);
  // How often reservation TTLs are swept (filter and bind check their own gang every call).
  absl::Duration sweep = absl::Seconds(1);
  // Gang queue (backfill, holds for starved large gangs) used by the default admission.
  QueueOptions queue;
  // How long a required tier binds, per tier, for gangs whose pods do not say
  // (topogang.io/required-tier-max-wait wins): then the gang is placed as if the tier were
  // preferred. Slurm's max_switch_wait, set once for the cluster instead of on every job; it is
  // what the simulated queue figures with lapsing tiers assume of every gang
  // (docs/placement-quality.md). Empty: a required tier binds until the gang starts.
  std::map<std::string, absl::Duration> required_tier_max_wait;
  // Who holds a gang named through the upstream API (spec.schedulingGroup / workloadRef) until
  // all its members are there. kAuto: kube-scheduler's GangScheduling plugin does, at Permit,
  // before the bind verb; so topogang binds each such member as it arrives (it still plans and
  // reserves the whole gang), unless a member reaches bind before every member was filtered:
  // then the plugin is evidently off and that gang falls back to topogang's barrier (a Warning
  // event says so). kTopogang: topogang's own barrier always, for a scheduler profile with
  // GangScheduling disabled. Gangs named any other way always use topogang's.
  enum class GangBarrier { kAuto, kTopogang };
  // spec.schedulerName values this daemon serves; a pod naming another is refused at filter.
  // Empty: any (kube-scheduler sends every profile's pods to its extenders, so set it when the
  // extender is configured on a shared kube-scheduler). Bindings are checked against the API
  // server either way (the pod must be pending there under the name seen at filter).
  std::vector<std::string> scheduler_names;
  // Topology-aware preemption for a multi-pod gang that cannot be placed: whole gangs of lower
  // priority are evicted (daemon/ledger_preempt.cc). Needs an Evictor (cluster mode).
  bool preemption = true;
  PreemptionOptions preemption_plan;
  // After a PodDisruptionBudget blocked a preemption, the next attempt for that gang waits this
  // long (clock time). kube-scheduler retries the gang's pods on its own in between.
  absl::Duration preemption_retry = absl::Seconds(30);
  // The preempted gangs' nodes are kept from gangs of equal or lower priority this long, or until
  // the preemptor is placed (kube-scheduler's nominatedNodeName, for a whole gang).
  absl::Duration nomination_ttl = absl::Minutes(5);
  // A gang whose member pod failed on a node avoids that node this long when it is planned again
  // (clock time; the nodes it names in topogang.io/avoid-nodes it avoids while it names them).
  absl::Duration failed_node_memory = absl::Hours(1);
  // Gangs of at least this many GPUs avoid nodes the agents' signals made slow
  // (DaemonState::slow_nodes); 0 = none does. One slow rank paces a whole all-reduce; a small
  // job barely notices.
  long slow_node_gang_gpus = 64;
  GangBarrier gang_barrier = GangBarrier::kAuto;
  // A pod refused for lack of room whose previous such refusal is at least this old (clock
  // time) is answered with a filter Error instead, once: kube-scheduler then tries it again
  // after its backoff. Such a pod was woken by a cluster event (a job ended), and its filter may
  // have reached topogangd before topogangd's own watch applied that event; a plain refusal on
  // that stale view would park it in kube-scheduler's unschedulable pool until the next event,
  // or 5 minutes. Must exceed podMaxBackoffSeconds (10 s), so that the retry itself, refused
  // again, is a plain refusal and no pod loops. Zero: off.
  absl::Duration wake_retry = absl::Seconds(30);
  // How often the worker runs the gang queue by itself while gangs wait in it (and at once after
  // a reservation expires). Time alone changes what may start: a reservation expires, a hold
  // gives up, a required tier lapses; nothing in the cluster changes, so kube-scheduler does not
  // ask again about the waiting pods for up to 5 minutes. A gang the queue starts without its own
  // pod asking (this pass, or another gang's filter) has its pods woken (SetWaker). Zero: off.
  absl::Duration queue_pass = absl::Seconds(5);
};

}  // namespace topogang
