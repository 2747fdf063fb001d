// The step between "a gang asks for GPUs" and "its GPUs are reserved". Direct admission reserves
// whenever the gang fits now; a queue policy (scheduler/queue_policy.h) can instead hold GPUs for
// large gangs that have waited too long, so a stream of small gangs cannot starve them. The
// service only talks to this interface, so the policy can be swapped without touching the verbs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/queue_policy.h"
#include "scheduler/queue_seniority.h"

namespace topogang {

class Admission {
 public:
  virtual ~Admission() = default;
  // Called under the DaemonState lock. Reserves every GPU of the gang or nothing; the error says
  // why it cannot start now. `exclude` names, for any gang, the nodes it must not be planned on
  // (a queue may start other waiting gangs during this call: each keeps its own constraints);
  // `hold_exclude` the nodes GPUs held for it must not be on (GangQueue::Schedule).
  // `waiting_since`: when the pod asking was first seen waiting for a node (the daemon's pod
  // watch); a queue counts the gang's arrival from no later than that, not from when
  // kube-scheduler first got round to asking (InfiniteFuture: unknown).
  virtual absl::StatusOr<const GangRecord*> Admit(
      GangScheduler& sched, const GangSpec& gang, absl::Time now,
      const GangQueue::NodeExclusion& exclude = {},
      const GangQueue::NodeExclusion& hold_exclude = {},
      absl::Time waiting_since = absl::InfiniteFuture()) = 0;
  // Every pod of the gang is gone: it leaves the queue at once (and any hold for it goes).
  virtual void Forget(GangScheduler& /*sched*/, const std::string& /*gang*/) {}
  // Runs the queue with no gang asking. What may start changes with time too (a reservation
  // expires, a hold gives up, a required tier lapses), and kube-scheduler asks again about a pod
  // it was told cannot fit only on a cluster event or after 5 minutes; so the daemon runs the
  // queue on a timer and wakes the pods of the gangs it starts.
  virtual void Pass(GangScheduler& /*sched*/, absl::Time /*now*/,
                    const GangQueue::NodeExclusion& /*exclude*/,
                    const GangQueue::NodeExclusion& /*hold_exclude*/) {}
  // The gangs the queue started (by Admit or Pass) since the last call, in start order, the
  // asking gang's own start included; the list is emptied. A gang started by another gang's
  // request has pods that were refused and are waiting for kube-scheduler to ask again.
  virtual std::vector<std::string> TakeStarted() { return {}; }
  // The gang `gang` waits behind in queue order (QueueOptions::large_gangs_in_order), or "": such
  // a gang is not preempted for, as it could not start on what preemption frees.
  virtual std::string WaitsBehind(const std::string& /*gang*/) const { return ""; }
  // Whether the large gangs overload the cluster (GangQueue::LargeGangsOverload), so a starved
  // gang stops only the share rule's gangs; true where no such switch applies.
  virtual bool LargeGangsOverload(absl::Time /*now*/) const { return true; }
  // The spec to plan `gang` with outside Admit (preemption, an elastic start), so those see a
  // required tier that has lapsed for it (scheduler/tier_lapse.h) as the queue does.
  virtual GangSpec Effective(const GangScheduler& /*sched*/, const GangSpec& gang,
                             absl::Time /*now*/) {
    return gang;
  }
  // Seniority across restarts and failovers (the daemon keeps it in a ConfigMap:
  // kube/queue_journal.h). Arrivals: every waiting gang's arrival and patience starts, and the
  // seeded ones not yet back. Seed: arrivals recorded by an earlier leader; a gang named there that
  // enters the queue again soon (scheduler/queue_admission.h) keeps that arrival. Call Seed before
  // serving: a gang already queued keeps the arrival it has.
  virtual std::map<std::string, QueueSeniority> Arrivals(absl::Time /*now*/) const { return {}; }
  virtual void Seed(const std::map<std::string, QueueSeniority>& /*arrivals*/, absl::Time /*now*/) {
  }
  // ... and the last pass that found the large gangs overloading the cluster
  // (GangQueue::large_overload_seen, SeedLargeOverload); InfinitePast where no switch applies.
  virtual absl::Time LargeOverloadSeen() const { return absl::InfinitePast(); }
  virtual void SeedLargeOverload(absl::Time /*seen*/, absl::Time /*now*/) {}
  // What waits in the queue now, for the daemon's metrics: the gangs of
  // QueueOptions::hold_min_gpus or more (those the queue keeps from starving; issue #12's "256+")
  // and the rest, each with the longest wait since a gang's arrival (zero when none waits). An
  // operator alerts on the large gangs' longest wait, which no counter shows.
  struct Waiting {
    int large = 0, small = 0;
    absl::Duration longest_large, longest_small;
  };
  virtual Waiting Queued(absl::Time /*now*/) const { return {}; }
};

class DirectAdmission : public Admission {
 public:
  absl::StatusOr<const GangRecord*> Admit(GangScheduler& sched, const GangSpec& gang,
                                          absl::Time now, const GangQueue::NodeExclusion& exclude,
                                          const GangQueue::NodeExclusion& = {},
                                          absl::Time = absl::InfiniteFuture()) override {
    const std::vector<int> masked = exclude ? sched.MaskNodes(exclude(gang)) : std::vector<int>{};
    auto r = sched.Reserve(gang, now);
    sched.UnmaskNodes(masked);
    return r;
  }
};

}  // namespace topogang
