// Which gang a pod belongs to, read from its labels/annotations. Two conventions are understood:
//
//   topogang.io/gang            gang name (label or annotation)            required
//   topogang.io/gang-size       number of member pods                      required with a gang
//   topogang.io/required-tier   tier the whole gang must fit in (e.g. "leaf")
//   topogang.io/preferred-tier  tier it should fit in if possible
//   topogang.io/required-tier-max-wait  how long the required tier binds ("5m"; default: always)
//   topogang.io/slice-size      members per slice (tensor/pipeline groups)
//   topogang.io/slice-tier      tier each slice must fit in
//   topogang.io/min-members     elastic gang: starts with this many, grows to gang-size
//
//   kueue.x-k8s.io/pod-group-name         label: gang name (Kueue plain pod groups)
//   kueue.x-k8s.io/pod-group-total-count  annotation: number of member pods
//
// Each topogang key may be a label or an annotation; if both are set they must agree. A gang is
// identified by namespace/name, so equal names in two namespaces are two gangs. The tier and
// slice keys also apply to gangs named by other conventions (k8s/gang_conventions.h).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/gang.h"

namespace topogang {

inline constexpr char kGangLabel[] = "topogang.io/gang";
inline constexpr char kGangSizeKey[] = "topogang.io/gang-size";
inline constexpr char kRequiredTierKey[] = "topogang.io/required-tier";
inline constexpr char kPreferredTierKey[] = "topogang.io/preferred-tier";
// A Go duration ("5m", "1h"): once the gang has waited this long, its required tier is only
// preferred (GangSpec::required_tier_max_wait; Slurm's --switches=N@max-time). Needs a required
// tier, from topogang.io/required-tier or the convention that named the gang.
inline constexpr char kRequiredTierMaxWaitKey[] = "topogang.io/required-tier-max-wait";
// Longer waits than kMaxRequiredTierWait (scheduler/gang.h) are refused as mistakes.
inline constexpr char kSliceSizeKey[] = "topogang.io/slice-size";
inline constexpr char kSliceTierKey[] = "topogang.io/slice-tier";
// An elastic gang (#13): it starts once this many members fit (1 <= min < size) and grows toward
// its size as GPUs free up next to it (scheduler/elastic.h).
inline constexpr char kMinMembersKey[] = "topogang.io/min-members";
inline constexpr char kKueueGroupLabel[] = "kueue.x-k8s.io/pod-group-name";
inline constexpr char kKueueCountAnnotation[] = "kueue.x-k8s.io/pod-group-total-count";
// Written by topogang on each gang member as it is bound (a launcher reads them, e.g. through
// the downward API: docs/extender.md, "Ranks"): the member's rank in topology order (0 ..
// world-size - 1; ranks next to each other sit on the same node, leaf, ... as far as the
// placement allows) and the gang's size.
inline constexpr char kRankAnnotation[] = "topogang.io/rank";
// Nodes the gang must not be placed on, comma-separated (set by the user: a node that makes the
// job slow without being broken).
inline constexpr char kAvoidNodesKey[] = "topogang.io/avoid-nodes";
inline constexpr char kWorldSizeAnnotation[] = "topogang.io/world-size";

// {kRankAnnotation: rank, kWorldSizeAnnotation: world_size}.
std::map<std::string, std::string> RankAnnotations(int rank, int world_size);

struct GangMembership {
  std::string id;  // namespace/name
  int size = 1;
  std::string required_tier;
  std::string preferred_tier;
  absl::Duration required_tier_max_wait = absl::InfiniteDuration();  // GangSpec's
  SliceSpec slice;
  std::string source;  // the convention that named it, for messages ("topogang.io/gang", ...)
  // Named through the upstream API (scheduling.k8s.io): kube-scheduler's GangScheduling plugin
  // already holds its members together at Permit, before the extender's bind.
  bool upstream = false;
  int index = -1;       // the member's rank where the convention gives one (informational)
  int min_members = 0;  // elastic: starts with this many (0: not elastic; else < size)

  // The core's view of the gang (name = id) for members of `gpus_per_member` GPUs.
  GangSpec ToSpec(int gpus_per_member) const;
};

// nullopt when the pod names no gang; an error when the keys are malformed or contradictory.
absl::StatusOr<std::optional<GangMembership>> ParseGangMembership(
    absl::string_view pod_namespace, const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations);

// One label convention alone, without the tier/slice keys: nullopt when its keys are absent.
enum class LabelConvention { kTopogang, kKueue };
absl::StatusOr<std::optional<GangMembership>> ParseLabelGang(
    LabelConvention convention, absl::string_view pod_namespace,
    const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations);

// Sets required/preferred tier and slice from the topogang.io keys (g->size must be set).
absl::Status ParsePlacementKeys(const std::map<std::string, std::string>& labels,
                                const std::map<std::string, std::string>& annotations,
                                GangMembership* g);

// The core name of the gang of one formed by a GPU pod without a gang. ':' never occurs in a
// label value, so it cannot collide with a real gang.
std::string SingletonGangId(absl::string_view pod_namespace, absl::string_view pod_name);

}  // namespace topogang
