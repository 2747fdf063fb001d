// The parts of Pod and Node objects kube-scheduler's default filters, scores and queue read,
// parsed once from the API server's JSON (core/v1 field names).
//
// A Pod or Node is immutable once parsed and shared by pointer between the informer store, the
// scheduling queue, the cache and in-flight cluster events, so a watch event that replaces an
// object never changes what a running scheduling cycle sees (kube-scheduler's snapshot rule).
// `object` keeps the JSON as received, in its key order, because the extender is sent the full
// Pod (and, with nodeCacheCapable false, the full Nodes).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace topogang::kubesched {

using Json = nlohmann::ordered_json;

// framework.Resource (pkg/scheduler/framework/types.go): CPU in millicores, memory and
// ephemeral storage in bytes, the allowed pod count, and scalar resources (extended resources
// such as nvidia.com/gpu, hugepages-*) in whole units.
struct Resources {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t allowed_pods = 0;  // allocatable only
  std::map<std::string, int64_t> scalar;

  void Add(const Resources& r);
  void Subtract(const Resources& r);
  int64_t Scalar(const std::string& name) const;
  bool IsZero() const;  // no CPU, memory, ephemeral storage or scalar entry at all
};

// Where a resource name goes in Resources (v1helper.IsScalarResourceName and friends).
enum class ResourceKind { kCpu, kMemory, kEphemeralStorage, kPods, kScalar, kIgnored };
ResourceKind KindOf(const std::string& resource_name);
// A domain-prefixed name outside kubernetes.io/ (v1helper.IsExtendedResourceName).
bool IsExtendedResourceName(const std::string& resource_name);

struct Toleration {
  std::string key, op, value, effect;  // op "" means Equal
};

struct Taint {
  std::string key, value, effect;
};

struct SelectorRequirement {
  std::string key, op;
  std::vector<std::string> values;
};

// One nodeSelectorTerm: matchExpressions AND matchFields.
struct SelectorTerm {
  std::vector<SelectorRequirement> match_expressions, match_fields;
};

struct PreferredTerm {
  int32_t weight = 0;
  SelectorTerm term;
};

struct Pod {
  std::string ns, name, uid, resource_version;
  std::string scheduler_name;  // "default-scheduler" when absent (API server defaulting)
  std::string node_name, nominated_node_name, phase;
  int32_t priority = 0;   // spec.priority (set by admission from priorityClassName)
  bool deleting = false;  // metadata.deletionTimestamp set
  std::map<std::string, std::string> labels, node_selector;
  // spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
  // nullopt when the pod has no required node affinity at all.
  std::optional<std::vector<SelectorTerm>> required_terms;
  std::vector<PreferredTerm> preferred_terms;
  std::vector<Toleration> tolerations;
  // Effective request (component-helpers resource.PodRequests): max(sum of containers and
  // sidecars, largest init container plus the sidecars before it) plus overhead, with a missing
  // request defaulted from the limit as the API server does.
  Resources requests;
  // Requests with CPU 100m / memory 200Mi for containers that set none (scoring only,
  // schedutil.GetNonzeroRequests).
  int64_t nonzero_milli_cpu = 0, nonzero_memory = 0;
  // Resource names under requests or limits of any container or init container: what the
  // extender's managedResources are matched against (HTTPExtender.IsInterested).
  std::set<std::string> container_resource_names;
  Json object;

  std::string key() const { return ns + "/" + name; }
};

struct Node {
  std::string name, uid, resource_version;
  std::string zone_key;  // region + ":\x00:" + zone, "" without topology labels
  std::map<std::string, std::string> labels, annotations;
  std::vector<Taint> taints;
  bool unschedulable = false;
  Resources allocatable;
  std::map<std::string, std::string> conditions;  // type -> status
  Json object;
};

using PodPtr = std::shared_ptr<const Pod>;
using NodePtr = std::shared_ptr<const Node>;

// Parses a core/v1 Pod. Fields of the wrong type are ignored; only a missing metadata.name is
// an error.
absl::StatusOr<PodPtr> ParsePod(Json object);

// Parses a core/v1 Node. A node whose status.allocatable has no "pods" entry gets
// `missing_pods_allocatable` (a kubelet always reports it; hand-made test nodes often do not).
absl::StatusOr<NodePtr> ParseNode(Json object, int64_t missing_pods_allocatable);

}  // namespace topogang::kubesched
