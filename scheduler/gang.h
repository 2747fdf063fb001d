// What a gang asks for. A gang is a set of members (pods) that must all be placed, each with the
// same number of GPUs on one node, optionally kept inside one domain of a tier.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace topogang {

inline constexpr int kMaxGangMembers = 100000;
// The longest GangSpec::required_tier_max_wait a user or an operator may give: a requirement
// that lapses after a month is a requirement.
inline constexpr absl::Duration kMaxRequiredTierWait = absl::Hours(24 * 7);

// Groups of `members` consecutive members that must each share one domain of `tier` (tensor- or
// pipeline-parallel groups). members == 0 means no slicing.
struct SliceSpec {
  int members = 0;
  std::string tier;
};

struct GangSpec {
  std::string name;
  int members = 1;
  int gpus_per_member = 1;
  std::string sku;               // "" = any SKU, but all members on one SKU
  bool allow_mixed_sku = false;  // let members land on different SKUs
  std::string required_tier;     // must fit inside one domain of this tier
  std::string preferred_tier;    // reported: whether it fit inside one domain of this tier
  // How long the required tier binds, counted from when the gang is queued (Slurm's
  // `--switches=N@max-time`, capped there by max_switch_wait): a gang that has waited this long
  // is placed as if the tier were only preferred, so a requirement one busy domain cannot meet
  // does not hold it for hours. Infinite (the default): the requirement never lapses.
  absl::Duration required_tier_max_wait = absl::InfiniteDuration();
  SliceSpec slice;
  int priority = 0;
  // How long the gang is expected to run (zero: not given): what its user says, or its time
  // limit if that is shorter. The queue reads it to tell when a running gang's GPUs should be
  // free again (scheduler/queue_policy.h). The daemon takes it from k8s/runtime_estimate.h.
  absl::Duration runtime_estimate = absl::ZeroDuration();
  // How long it may run at most, enforced by the platform (zero: no limit): the kubelet stops a
  // pod at its activeDeadlineSeconds, Slurm a job at its time limit. Only a gang with a limit may
  // run on GPUs held for a starved gang, and only if the limit ends before the hold is due: an
  // estimate nobody enforces would let any gang claim it is short and take them.
  absl::Duration runtime_limit = absl::ZeroDuration();

  long total_gpus() const { return static_cast<long>(members) * gpus_per_member; }
};

// Structural checks that need no cluster: names, counts, slice divisibility.
absl::Status ValidateGang(const GangSpec& gang);

}  // namespace topogang
