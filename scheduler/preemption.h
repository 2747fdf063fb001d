// Topology-aware gang preemption: which lower-priority gangs to evict so that a pending gang that
// does not fit gets one domain of its required tier (a leaf, an NVLink domain, ...).
//
// Rules: victims are whole gangs (every member goes), only gangs of strictly lower priority, only
// reserved or running gangs (a queue hold, kHeld, is rebuilt by the queue and never a victim).
// The answer is checked by re-planning the gang with the victims gone (the Planner, unchanged): a
// plan is never proposed for a gang that would still not fit.
//
// Candidate domains are the domains of the required tier (the whole cluster when there is none)
// and every narrower domain below them, so a gang may be given one leaf even when it only
// requires one spine. In each candidate the victims are chosen greedily: first the lowest
// priority ceiling at which evicting every eligible gang would make room (exact), then, under that
// ceiling, the gang whose eviction frees the most member slots, until the gang fits; then victims
// that turned out unnecessary are dropped again. Candidates are ranked lexicographically by
//   1. the highest victim priority (lower is better),
//   2. the number of victim gangs,
//   3. the GPUs preempted (all GPUs of the victims, inside the domain or not),
//   4. fragmentation left behind: the change in partially used nodes (some GPUs free, some not)
//      once the victims are gone and the gang is placed,
//   5. the narrower domain, then the lower domain id (deterministic).
// Items 1-3 and 5 are counted per candidate without planning; item 4 needs the placement, so
// only the best candidates by 1-3 are re-planned, at most max_verifications of them.
// Victims are counted in members per domain, exact without slices. With slices that count is
// necessary but not sufficient: a candidate whose re-plan fails is skipped, and a domain whose
// member count already suffices gets victims only through its narrower domains (e.g. the slice
// tier). Domains that could not hold the gang even with every eligible gang gone are skipped
// from per-node prefix sums, without looking at their gangs (fast at 12,800 nodes: ~50 ms for a
// 400-node gang over 12,800 one-node gangs, tests/scheduler/preemption_test.cc).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/gang.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/placement.h"

namespace topogang {

struct PreemptionOptions {
  // Re-plans (on a copy of the cluster) at most this many candidate victim sets per call.
  int max_verifications = 16;
  // Reservations (promised, not yet bound) may be preempted as well as running gangs.
  bool preempt_reserved = true;
};

struct PreemptionPlan {
  std::vector<std::string> victims;  // gang names, ascending; empty: the gang fits as it is
  Placement placement;               // where the gang goes once the victims are gone
  int domain = -1;                   // the candidate domain the victims were chosen in
  int max_victim_priority = 0;       // meaningful when victims is not empty
  long victim_gpus = 0;
  int fragmentation_delta = 0;  // partially used nodes after minus before (touched nodes only)
};

// The victims and placement for `gang`, or: the planner's InvalidArgument for a malformed gang;
// ResourceExhausted naming why no set of lower-priority gangs makes room. When the gang fits
// without preemption the plan has no victims. Reads `sched` only.
absl::StatusOr<PreemptionPlan> PlanPreemption(const GangScheduler& sched, const GangSpec& gang,
                                              const PreemptionOptions& options = {});

// Releases the plan's victims and reserves `gang` at the plan's placement, all-or-nothing as far
// as the scheduler allows: victims are checked to exist and be lower priority first. The caller
// evicts the victims' pods (the daemon: the Eviction API).
absl::Status ApplyPreemption(GangScheduler& sched, const GangSpec& gang, const PreemptionPlan& plan,
                             absl::Time now);

}  // namespace topogang
