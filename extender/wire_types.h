// kube-scheduler's extender wire format (k8s.io/kube-scheduler/extender/v1). The Go types carry
// no json tags, so keys are the Go field names ("Pod", "NodeNames", "FailedNodes", "Host", ...):
// we accept them in any case (Go's decoder does) and emit them exactly. Unused fields arrive as
// null. Embedded Kubernetes objects keep their camelCase keys and are kept as JSON here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json_util.h"

namespace topogang {

// Request of filter and prioritize.
struct ExtenderArgs {
  Json pod;                        // the v1.Pod object
  bool node_cache = true;          // NodeNames were sent (nodeCacheCapable); else Nodes
  std::vector<std::string> names;  // candidate node names, in the order sent
  // Full NodeList mode: Nodes.metadata and each of Nodes.items as JSON text (minified), parallel
  // to names. Kept as text: the daemon only echoes the items of passing nodes back.
  std::string node_list_meta = "{}";
  std::vector<std::string> node_items;
  // Every name is printable ASCII without '"' or '\\' (the parser checked), so replies can copy
  // names without escaping them.
  bool names_plain = false;
};
// extender_args.cc (simdjson).
absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body);
std::string SerializeExtenderArgs(const ExtenderArgs& a);

struct ExtenderFilterResult {
  // Passing nodes: NodeNames when node_cache, else the NodeList of the passing input items
  // (echoed unmodified). Indices into ExtenderArgs::names.
  bool node_cache = true;
  std::vector<std::string> node_names;
  Json nodes;  // NodeList, used when !node_cache
  std::vector<std::pair<std::string, std::string>> failed;
  std::vector<std::pair<std::string, std::string>> failed_unresolvable;
  std::string error;
};
std::string SerializeFilterResult(const ExtenderFilterResult& r);

// The daemon's form of a filter answer: one verdict per offered node (parallel to
// ExtenderArgs::names) over a few distinct reasons. A 12,500-node answer is then 25 KB of
// verdicts instead of 25,000 strings; SerializeFilterVerdicts writes the ExtenderFilterResult wire
// shape straight from it.
struct FilterVerdicts {
  struct Reason {
    std::string text;
    bool unresolvable = false;  // FailedAndUnresolvableNodes: preemption cannot help there
  };
  std::vector<Reason> reasons;
  // 0 = passes; k = fails with reasons[k - 1]; kOmit = neither. kube-scheduler keeps only the
  // nodes a reply passes and drops the rest, failed or not (findNodesThatPassExtenders in
  // pkg/scheduler/schedule_one.go); the failed maps only feed a FitError message and
  // preemption, both moot when a node passes. A steered reply is therefore one name, not one
  // entry per node (12,500 entries cost kube-scheduler ~10 ms to decode per cycle).
  static constexpr uint16_t kOmit = 0xFFFF;
  std::vector<uint16_t> verdict;
  std::string error;

  uint16_t AddReason(std::string text, bool unresolvable);
};
std::string SerializeFilterVerdicts(const ExtenderArgs& args, const FilterVerdicts& v);
// The same answer as a struct (tests, and callers that inspect nodes by name).
ExtenderFilterResult ToFilterResult(const ExtenderArgs& args, const FilterVerdicts& v);
// For clients and tests: reads a reply (either mode).
absl::StatusOr<ExtenderFilterResult> ParseFilterResult(absl::string_view body);

struct HostPriority {
  std::string host;
  int64_t score = 0;  // 0..10
};
std::string SerializeHostPriorityList(const std::vector<HostPriority>& list);
absl::StatusOr<std::vector<HostPriority>> ParseHostPriorityList(absl::string_view body);

struct ExtenderBindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
absl::StatusOr<ExtenderBindingArgs> ParseBindingArgs(absl::string_view body);
std::string SerializeBindingArgs(const ExtenderBindingArgs& a);

struct ExtenderBindingResult {
  std::string error;
};
std::string SerializeBindingResult(const ExtenderBindingResult& r);
absl::StatusOr<ExtenderBindingResult> ParseBindingResult(absl::string_view body);

// Victims of one node. Meta form (nodeCacheCapable) carries only UIDs; the full form carries pod
// objects, whose UIDs are extracted into `uids` as well.
struct Victims {
  std::vector<std::string> uids;
  std::vector<Json> pods;  // full form only
  int64_t num_pdb_violations = 0;
};
struct ExtenderPreemptionArgs {
  Json pod;
  bool meta = true;  // NodeNameToMetaVictims was sent
  std::map<std::string, Victims> victims;
};
absl::StatusOr<ExtenderPreemptionArgs> ParsePreemptionArgs(absl::string_view body);

// Always answered with MetaVictims (UIDs), whichever form came in.
struct ExtenderPreemptionResult {
  std::map<std::string, Victims> victims;
};
std::string SerializePreemptionResult(const ExtenderPreemptionResult& r);
absl::StatusOr<ExtenderPreemptionResult> ParsePreemptionResult(absl::string_view body);

}  // namespace topogang
