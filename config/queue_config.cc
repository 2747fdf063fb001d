#include "config/queue_config.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/yaml_util.h"

namespace topogang {
namespace {

// Tier names as topology configs spell them: lowercase alphanumerics, '-', '.', '_'.
bool IsTierName(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (absl::ascii_isupper(c)) return false;
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

// `daemon.required_tier_max_wait_seconds`: {tier: seconds}.
absl::Status ParseTierWaits(const YAML::Node& n, absl::string_view source,
                            std::map<std::string, absl::Duration>& out) {
  if (!n.IsDefined() || n.IsNull()) return absl::OkStatus();
  if (!n.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, n), ": daemon.required_tier_max_wait_seconds: expected a ",
                     "mapping of tier name to seconds, e.g. {leaf: 300, spine: 300}"));
  }
  std::map<std::string, absl::Duration> waits;
  for (const auto& kv : n) {
    const std::string tier = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (!IsTierName(tier)) {
      return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, kv.first),
                                                     ": daemon.required_tier_max_wait_seconds: \"",
                                                     tier.substr(0, 80), "\" is not a tier name"));
    }
    // The same bound as the topogang.io/required-tier-max-wait annotation's.
    const int64_t max = absl::ToInt64Seconds(kMaxRequiredTierWait);
    int64_t secs = -1;
    if (!kv.second.IsScalar() || !absl::SimpleAtoi(kv.second.Scalar(), &secs) || secs < 0 ||
        secs > max) {
      return absl::InvalidArgumentError(
          absl::StrCat(YamlWhere(source, kv.second), ": daemon.required_tier_max_wait_seconds.",
                       tier, ": expected whole seconds from 0 to ", max, " (7 days)"));
    }
    waits[tier] = absl::Seconds(secs);
  }
  out = std::move(waits);
  return absl::OkStatus();
}

absl::Status ReadSeconds(const YAML::Node& d, const char* key, absl::string_view source,
                         int64_t max, absl::Duration& field) {
  auto v = YamlInt(d, key, source, 0, max, absl::ToInt64Seconds(field));
  if (!v.ok()) return v.status();
  field = absl::Seconds(*v);
  return absl::OkStatus();
}

}  // namespace

const std::set<std::string>& DaemonQueueKeys() {
  static const std::set<std::string> keys = {"starvation_threshold_seconds",
                                             "hold_min_gpus",
                                             "max_holds",
                                             "locality_patience_seconds",
                                             "thin_side_patience_seconds",
                                             "keep_claim_clear",
                                             "large_gangs_in_order",
                                             "large_in_order_min_share",
                                             "large_in_order_overload_backlog",
                                             "large_in_order_overload_memory_seconds",
                                             "required_tier_max_wait_seconds"};
  return keys;
}

absl::Status ParseDaemonQueueConfig(const YAML::Node& d, absl::string_view source,
                                    DaemonQueueConfig& out) {
  if (!d.IsDefined() || d.IsNull()) return absl::OkStatus();
  if (!d.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, d), ": daemon: expected a mapping"));
  }
  QueueOptions& q = out.queue;
  if (absl::Status s = ReadSeconds(d, "starvation_threshold_seconds", source, 30 * 86400,
                                   q.starvation_threshold);
      !s.ok()) {
    return s;
  }
  auto hold_min = YamlInt(d, "hold_min_gpus", source, 1, 10000000, q.hold_min_gpus);
  if (!hold_min.ok()) return hold_min.status();
  q.hold_min_gpus = static_cast<int>(*hold_min);
  auto holds = YamlInt(d, "max_holds", source, 0, 1000, q.max_holds);
  if (!holds.ok()) return holds.status();
  q.max_holds = static_cast<int>(*holds);
  if (absl::Status s =
          ReadSeconds(d, "locality_patience_seconds", source, 86400, q.locality_patience);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadSeconds(d, "thin_side_patience_seconds", source, 7 * 86400, q.thin_side_patience);
      !s.ok()) {
    return s;
  }
  for (auto [key, field] : {std::pair{"keep_claim_clear", &q.keep_claim_clear},
                            std::pair{"large_gangs_in_order", &q.large_gangs_in_order}}) {
    auto v = YamlBool(d, key, source, *field);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  auto share = YamlDouble(d, "large_in_order_min_share", source, 0, 1, q.large_in_order_min_share);
  if (!share.ok()) return share.status();
  q.large_in_order_min_share = *share;
  // A share of the cluster's GPUs; above 1 means the large gangs' backlog alone outgrows the
  // cluster several times over before the share rule applies.
  auto backlog = YamlDouble(d, "large_in_order_overload_backlog", source, 0, 100,
                            q.large_in_order_overload_backlog);
  if (!backlog.ok()) return backlog.status();
  q.large_in_order_overload_backlog = *backlog;
  if (absl::Status s = ReadSeconds(d, "large_in_order_overload_memory_seconds", source, 30 * 86400,
                                   q.large_in_order_overload_memory);
      !s.ok()) {
    return s;
  }
  if (const std::string why = QueueOptions::OverloadBacklogProblem(
          q.large_in_order_overload_backlog, q.large_in_order_min_share,
          "large_in_order_min_share");
      !why.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, d), ": daemon.large_in_order_overload_backlog ", why));
  }
  return ParseTierWaits(d["required_tier_max_wait_seconds"], source, out.required_tier_max_wait);
}

}  // namespace topogang
