// When a required tier stops binding (GangSpec::required_tier_max_wait; Slurm's
// --switches=N@max-time). Shared by the gang queue, which starts lapsed gangs, and by the daemon's
// preemption and elastic starts, which must plan the gang as the queue would.
#pragma once

#include <map>
#include <string>

#include "absl/time/time.h"
#include "scheduler/gang.h"
#include "topology/cluster.h"

namespace topogang {

// Whether `gang`, having waited `waited`, is past its required tier's wait. Never for a gang
// without a requirement, or with a tier `c` does not have (the planner's error must stand).
bool TierLapsed(const Cluster& c, const GangSpec& gang, absl::Duration waited);

// `gang` with its required tier turned into a preference (the narrower of it and the gang's own
// preference): the planner still keeps it inside one such domain when one has room, and
// otherwise places it across them. The caller checks TierLapsed first.
GangSpec LapseRequiredTier(const Cluster& c, GangSpec gang);

// The cluster's wait for a gang requiring `required_tier` (an operator's per-tier setting:
// daemon.required_tier_max_wait_seconds), InfiniteDuration when none applies. Tiers are matched
// by level, so an alias, or the tier a PodGroup's topology key maps to, counts.
absl::Duration ClusterTierWait(const Cluster& c, const std::string& required_tier,
                               const std::map<std::string, absl::Duration>& wait_by_tier);

}  // namespace topogang
