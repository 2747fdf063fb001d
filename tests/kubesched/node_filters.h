// kube-scheduler's default Filter plugins that decide where a pod may go, as pure functions
// over parsed objects (no I/O, no locks: thread-compatible).
//
// They run in the default profile's order (pkg/scheduler/apis/config/v1/default_plugins.go) and
// the first rejection wins, as in frameworkImpl.RunFilterPlugins:
//   NodeUnschedulable  framework/plugins/nodeunschedulable/node_unschedulable.go
//   TaintToleration    framework/plugins/tainttoleration/taint_toleration.go
//   NodeAffinity       framework/plugins/nodeaffinity/node_affinity.go with
//                      k8s.io/component-helpers/scheduling/corev1/nodeaffinity
//   NodeResourcesFit   framework/plugins/noderesources/fit.go (fitsRequest)
// Reason strings are kube-scheduler's, so FitError messages read the same.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/kubesched/api_objects.h"

namespace topogang::kubesched {

inline constexpr char kNodeUnschedulable[] = "NodeUnschedulable";
inline constexpr char kTaintToleration[] = "TaintToleration";
inline constexpr char kNodeAffinity[] = "NodeAffinity";
inline constexpr char kNodeResourcesFit[] = "NodeResourcesFit";
// framework.ExtenderName: recorded as the rejecting "plugin" when an extender removed nodes.
inline constexpr char kExtenderPlugin[] = "Extender";

// fwk.Code, the part that matters for a filter.
enum class Code { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kError };

struct Status {
  Code code = Code::kSuccess;
  std::string plugin;
  std::vector<std::string> reasons;

  bool ok() const { return code == Code::kSuccess; }
  bool rejected() const {
    return code == Code::kUnschedulable || code == Code::kUnschedulableAndUnresolvable;
  }
};

// A node as a scheduling cycle sees it (framework.NodeInfo): the Node plus the sums over the
// pods assigned or assumed on it.
struct NodeState {
  NodePtr node;
  Resources requested;                                // NodeInfo.Requested
  int64_t nonzero_milli_cpu = 0, nonzero_memory = 0;  // NodeInfo.NonZeroRequested
  int num_pods = 0;
};

// k8s.io/api/core/v1 Toleration.ToleratesTaint.
bool ToleratesTaint(const Toleration& toleration, const Taint& taint);
bool TolerationsTolerateTaint(const std::vector<Toleration>& tolerations, const Taint& taint);
// The first NoSchedule or NoExecute taint none of `tolerations` tolerates, or nullptr
// (v1helper.FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc).
const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints,
                                  const std::vector<Toleration>& tolerations);

// One matchExpressions entry against labels (labels.Requirement.Matches): In, NotIn, Exists,
// DoesNotExist, Gt, Lt. A malformed requirement (e.g. In without values) matches nothing.
bool MatchesLabelRequirement(const SelectorRequirement& req,
                             const std::map<std::string, std::string>& labels);
// One nodeSelectorTerm; matchFields supports metadata.name with In/NotIn and one value. A term
// with neither expressions nor fields matches nothing.
bool MatchesTerm(const SelectorTerm& term, const Node& node);
// spec.nodeSelector AND (any of the required nodeSelectorTerms)
// (nodeaffinity.RequiredNodeAffinity).
bool MatchesRequiredNodeAffinity(const Pod& pod, const Node& node);

Status FilterNodeUnschedulable(const Pod& pod, const Node& node);
Status FilterTaintToleration(const Pod& pod, const Node& node);
Status FilterNodeAffinity(const Pod& pod, const Node& node);

struct InsufficientResource {
  std::string resource;
  std::string reason;         // "Insufficient cpu", "Too many pods", ...
  bool unresolvable = false;  // the request exceeds even an empty node
};
// noderesources.Fits: pod count, CPU, memory, ephemeral storage and scalar resources against
// allocatable minus what `state` already holds. Names in `ignored` (extender managedResources
// with ignoredByScheduler) are not checked.
std::vector<InsufficientResource> Fits(const Pod& pod, const NodeState& state,
                                       const std::set<std::string>& ignored = {});
Status FilterNodeResourcesFit(const Pod& pod, const NodeState& state,
                              const std::set<std::string>& ignored = {});

// All four, in profile order; returns the first rejection (or success).
Status RunFilters(const Pod& pod, const NodeState& state,
                  const std::set<std::string>& ignored_resources = {});

}  // namespace topogang::kubesched
