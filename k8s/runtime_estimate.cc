#include "k8s/runtime_estimate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "k8s/duration.h"

namespace topogang {

absl::StatusOr<absl::Duration> ParseRuntimeEstimate(
    const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations, int64_t active_deadline_seconds) {
  absl::Duration est = absl::ZeroDuration();
  auto label = labels.find(kRuntimeEstimateKey);
  auto annotation = annotations.find(kRuntimeEstimateKey);
  if (label != labels.end()) {
    auto d = ParseKubeDuration(absl::StrCat("label ", kRuntimeEstimateKey), label->second,
                               kMaxRuntimeEstimate);
    if (!d.ok()) return d.status();
    est = *d;
  }
  if (annotation != annotations.end()) {
    auto d = ParseKubeDuration(absl::StrCat("annotation ", kRuntimeEstimateKey), annotation->second,
                               kMaxRuntimeEstimate);
    if (!d.ok()) return d.status();
    if (est > absl::ZeroDuration() && est != *d) {
      return absl::InvalidArgumentError(absl::StrCat(kRuntimeEstimateKey, ": the label (",
                                                     label->second, ") and the annotation (",
                                                     annotation->second, ") disagree"));
    }
    est = *d;
  }
  if (const absl::Duration limit = RuntimeLimit(active_deadline_seconds);
      limit > absl::ZeroDuration()) {
    est = est > absl::ZeroDuration() ? std::min(est, limit) : limit;
  }
  return est;
}

absl::Duration RuntimeLimit(int64_t active_deadline_seconds) {
  if (active_deadline_seconds <= 0) return absl::ZeroDuration();
  return std::min(absl::Seconds(active_deadline_seconds), kMaxRuntimeEstimate);
}

}  // namespace topogang
