// Replacing members a running gang lost (a node failed, a leaf switch rebooted): one proposal for
// all of them at once, or a clear answer that the gang must be re-planned whole.
//
// Proposals keep the gang's constraints, which member-by-member replacement would not:
//   - slices: a lost member goes inside the slice-tier domain of its surviving slice-mates (an
//     NVLink domain for a tensor-parallel group); a slice that lost every member gets a fresh
//     slice-tier domain as close to the survivors as there is one with room for the whole slice;
//   - the required tier: never outside the domain the survivors are in;
//   - spares (scheduler/spares.h): a spare in the lost node's domain is taken first, so the
//     restarted member lands next to its peers at once; ordinary capacity never uses spares.
// Everything else goes to the nearest free GPUs (Planner::PlanNear). All-or-nothing: the GPUs of
// one member are held while the next is placed, so a proposal never promises a GPU twice, and
// when any member cannot be placed none is.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/placement.h"
#include "scheduler/spares.h"

namespace topogang {

struct ReplacementOptions {
  const SparePool* spares = nullptr;  // none: no spares in this cluster
  // Per lost member, the node it was on (-1: unknown). Empty: read from the gang's record (the
  // daemon releases a member when its pod goes, so it remembers the node itself).
  std::vector<int> old_nodes;
};

// Where the `lost` members (ordinals) of `gang` could go, in the order of `lost`. Errors:
// NotFound (no such gang), InvalidArgument (an ordinal out of range or repeated, old_nodes of the
// wrong size), FailedPrecondition when a slice cannot be kept (the message says which and that
// the gang must be re-planned whole), ResourceExhausted when there is no room near the survivors.
// Call with the spares unmasked; the scheduler is changed only for the duration of the call.
absl::StatusOr<std::vector<MemberPlacement>> ProposeReplacement(
    GangScheduler& sched, absl::string_view gang, const std::vector<int>& lost,
    const ReplacementOptions& options = {});

}  // namespace topogang
