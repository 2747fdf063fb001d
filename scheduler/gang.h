// What a gang asks for. A gang is a set of members (pods) that must all be placed, each with the
// same number of GPUs on one node, optionally kept inside one domain of a tier.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace topogang {

inline constexpr int kMaxGangMembers = 100000;
inline constexpr char kRuntimeEstimateAnnotation[] = "topogang.io/runtime-estimate";

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
  SliceSpec slice;
  int priority = 0;
  // How long the user expects the gang to run (zero: not given). Only the queue reads it: a gang
  // that says it ends before a large gang's reservation starts may use the reserved GPUs
  // meanwhile (scheduler/queue_policy.h). Pods would carry it as the annotation
  // kRuntimeEstimateAnnotation (a Go duration such as "90m" or "4h"); the daemon does not parse
  // it yet, so today only the simulator sets it.
  absl::Duration runtime_estimate = absl::ZeroDuration();

  long total_gpus() const { return static_cast<long>(members) * gpus_per_member; }
};

// Structural checks that need no cluster: names, counts, slice divisibility.
absl::Status ValidateGang(const GangSpec& gang);

}  // namespace topogang
