// How long a gang expects to run, from what a Kubernetes user can say about a pod: the
// topogang.io/runtime-estimate key (a label or an annotation: "45m", "4h", "1h30m") and the pod's
// spec.activeDeadlineSeconds (a hard limit: the kubelet stops the pod after it, so the job cannot
// run longer, just as Slurm's time limit). The gang queue plans with both
// (scheduler/queue_policy.h): a hold knows when the gangs on its nodes should be done (the
// estimate), and a gang whose limit ends before a hold is due may run on the held GPUs meanwhile
// (the limit only: an estimate is a promise nothing enforces). Most jobs say nothing; that is fine.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace topogang {

inline constexpr char kRuntimeEstimateKey[] = "topogang.io/runtime-estimate";
// Longer estimates are refused as mistakes (a year of GPU time is not an estimate).
inline constexpr absl::Duration kMaxRuntimeEstimate = absl::Hours(24 * 366);

// The estimate: the smaller of the key and activeDeadlineSeconds (0 = unset); ZeroDuration when
// neither is set. InvalidArgument naming the key for a malformed, non-positive or absurd value,
// or when the label and the annotation disagree.
absl::StatusOr<absl::Duration> ParseRuntimeEstimate(
    const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations, int64_t active_deadline_seconds);

// The enforced limit: activeDeadlineSeconds (capped at kMaxRuntimeEstimate), zero when unset.
absl::Duration RuntimeLimit(int64_t active_deadline_seconds);

}  // namespace topogang
