#include "k8s/gang_labels.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "k8s/duration.h"

namespace topogang {
namespace {

// The value of `key` from labels or annotations; both set and different is an error.
absl::StatusOr<std::string> Lookup(const std::map<std::string, std::string>& labels,
                                   const std::map<std::string, std::string>& annotations,
                                   const char* key) {
  auto l = labels.find(key);
  auto a = annotations.find(key);
  if (l != labels.end() && a != annotations.end() && l->second != a->second) {
    return absl::InvalidArgumentError(absl::StrCat(
        "label ", key, "=\"", l->second, "\" disagrees with annotation \"", a->second, "\""));
  }
  if (l != labels.end()) return l->second;
  if (a != annotations.end()) return a->second;
  return std::string();
}

bool ValidName(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

absl::StatusOr<int> StrictCount(absl::string_view key, absl::string_view v, int max) {
  if (v.empty() || v.size() > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=\"", v.substr(0, 32), "\": expected an integer in [1, ", max, "]"));
  }
  int n = 0;
  for (char c : v) {
    if (!absl::ascii_isdigit(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "=\"", v.substr(0, 32), "\": expected an integer in [1, ", max, "]"));
    }
    n = n * 10 + (c - '0');
  }
  if (n < 1 || n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=", n, ": expected an integer in [1, ", max, "]"));
  }
  return n;
}

}  // namespace

GangSpec GangMembership::ToSpec(int gpus_per_member) const {
  GangSpec g;
  g.name = id;
  g.members = size;
  g.gpus_per_member = gpus_per_member;
  g.required_tier = required_tier;
  g.preferred_tier = preferred_tier;
  g.required_tier_max_wait = required_tier_max_wait;
  g.slice = slice;
  return g;
}

std::string SingletonGangId(absl::string_view pod_namespace, absl::string_view pod_name) {
  return absl::StrCat(pod_namespace, "/pod:", pod_name);
}

absl::StatusOr<std::optional<GangMembership>> ParseLabelGang(
    LabelConvention convention, absl::string_view pod_namespace,
    const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations) {
  std::string name, size_text;
  const char* size_key = kGangSizeKey;
  if (convention == LabelConvention::kTopogang) {
    auto n = Lookup(labels, annotations, kGangLabel);
    if (!n.ok()) return n.status();
    auto t = Lookup(labels, annotations, kGangSizeKey);
    if (!t.ok()) return t.status();
    if (n->empty()) {
      if (!t->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(kGangSizeKey, " is set but ", kGangLabel, " is not"));
      }
      return std::optional<GangMembership>();
    }
    name = *n;
    size_text = *t;
  } else {
    auto k = labels.find(kKueueGroupLabel);
    if (k == labels.end()) return std::optional<GangMembership>();
    name = k->second;
    size_key = kKueueCountAnnotation;
    auto a = annotations.find(kKueueCountAnnotation);
    size_text = a == annotations.end() ? "" : a->second;
  }
  if (!ValidName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gang name \"", absl::string_view(name).substr(0, 80),
                     "\" must be 1-63 characters of letters, digits, '-', '_' or '.'"));
  }
  if (size_text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gang ", name, ": ", size_key, " is required (the number of member pods)"));
  }
  GangMembership g;
  g.id = absl::StrCat(pod_namespace, "/", name);
  g.source = convention == LabelConvention::kTopogang ? kGangLabel : kKueueGroupLabel;
  auto size = StrictCount(size_key, size_text, kMaxGangMembers);
  if (!size.ok()) return size.status();
  g.size = *size;
  return std::optional<GangMembership>(std::move(g));
}

absl::Status ParsePlacementKeys(const std::map<std::string, std::string>& labels,
                                const std::map<std::string, std::string>& annotations,
                                GangMembership* g) {
  for (auto [key, field] : {std::pair{kRequiredTierKey, &g->required_tier},
                            std::pair{kPreferredTierKey, &g->preferred_tier},
                            std::pair{kSliceTierKey, &g->slice.tier}}) {
    auto v = Lookup(labels, annotations, key);
    if (!v.ok()) return v.status();
    if (v->empty()) continue;
    if (!ValidName(*v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "=\"", v->substr(0, 80), "\": not a valid tier name"));
    }
    if (!field->empty() && *field != *v) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=\"", *v,
                                                     "\" disagrees with the tier \"", *field,
                                                     "\" its ", g->source, " requires"));
    }
    *field = *v;
  }
  auto wait = Lookup(labels, annotations, kRequiredTierMaxWaitKey);
  if (!wait.ok()) return wait.status();
  if (!wait->empty()) {
    if (g->required_tier.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kRequiredTierMaxWaitKey, " needs a required tier (", kRequiredTierKey,
                       "): without one there is nothing to wait for"));
    }
    auto d = ParseKubeDuration(kRequiredTierMaxWaitKey, *wait, kMaxRequiredTierWait,
                               /*allow_zero=*/true);
    if (!d.ok()) return d.status();
    g->required_tier_max_wait = *d;
  }
  auto slice = Lookup(labels, annotations, kSliceSizeKey);
  if (!slice.ok()) return slice.status();
  if (!slice->empty()) {
    auto n = StrictCount(kSliceSizeKey, *slice, g->size);
    if (!n.ok()) return n.status();
    g->slice.members = *n;
    if (g->slice.tier.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kSliceSizeKey, " needs ", kSliceTierKey, " (the tier each slice fits in)"));
    }
  } else if (!g->slice.tier.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kSliceTierKey, " needs ", kSliceSizeKey));
  }
  auto min = Lookup(labels, annotations, kMinMembersKey);
  if (!min.ok()) return min.status();
  if (!min->empty()) {
    auto n = StrictCount(kMinMembersKey, *min, g->size);
    if (!n.ok()) return n.status();
    g->min_members = *n < g->size ? *n : 0;  // min == size: an ordinary gang
    if (g->min_members > 0 && g->slice.members > 0) {
      return absl::InvalidArgumentError(absl::StrCat(kMinMembersKey, " with ", kSliceSizeKey,
                                                     ": elastic gangs cannot have slices yet"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<GangMembership>> ParseGangMembership(
    absl::string_view pod_namespace, const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations) {
  auto g = ParseLabelGang(LabelConvention::kTopogang, pod_namespace, labels, annotations);
  if (!g.ok()) return g.status();
  if (!g->has_value()) {
    g = ParseLabelGang(LabelConvention::kKueue, pod_namespace, labels, annotations);
    if (!g.ok() || !g->has_value()) return g;
  }
  if (absl::Status s = ParsePlacementKeys(labels, annotations, &**g); !s.ok()) return s;
  return g;
}

std::map<std::string, std::string> RankAnnotations(int rank, int world_size) {
  return {{kRankAnnotation, std::to_string(rank)},
          {kWorldSizeAnnotation, std::to_string(world_size)}};
}

}  // namespace topogang
