#include "k8s/runtime_estimate.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace topogang {
namespace {

// Go's time.ParseDuration syntax, as kubectl users write durations: whole or decimal numbers,
// each followed by a unit (h, m, s, ms, us, ns). absl::ParseDuration reads the same syntax; a
// bare number is refused here, since "3600" could mean seconds or minutes.
absl::StatusOr<absl::Duration> ParseValue(const std::string& where, const std::string& text) {
  const std::string v(absl::StripAsciiWhitespace(text));
  absl::Duration d;
  const bool has_unit = !v.empty() && absl::ascii_isalpha(static_cast<unsigned char>(v.back()));
  if (!has_unit || !absl::ParseDuration(v, &d) || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "=\"", v.substr(0, 40), "\": expected a duration such as 45m, 4h or 1h30m"));
  }
  if (d <= absl::ZeroDuration() || d > kMaxRuntimeEstimate) {
    return absl::InvalidArgumentError(absl::StrCat(where, "=\"", v.substr(0, 40),
                                                   "\": must be more than 0 and at most 366 days"));
  }
  return d;
}

}  // namespace

absl::StatusOr<absl::Duration> ParseRuntimeEstimate(
    const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations, int64_t active_deadline_seconds) {
  absl::Duration est = absl::ZeroDuration();
  auto label = labels.find(kRuntimeEstimateKey);
  auto annotation = annotations.find(kRuntimeEstimateKey);
  if (label != labels.end()) {
    auto d = ParseValue(absl::StrCat("label ", kRuntimeEstimateKey), label->second);
    if (!d.ok()) return d.status();
    est = *d;
  }
  if (annotation != annotations.end()) {
    auto d = ParseValue(absl::StrCat("annotation ", kRuntimeEstimateKey), annotation->second);
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
