// The facts about a core/v1 Node that topogang needs: labels (topology), allocatable GPUs, the
// GPU model, and the reasons it may be unusable (cordon, NoSchedule/NoExecute taints, NotReady).
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json_util.h"
#include "topology/cluster_spec.h"

namespace topogang {

// GPU Feature Discovery's label naming the GPU model.
inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";

// Set by the operator (value "true") on nodes kept idle as hot spares (docs/spares.md): they take
// no ordinary GPU work, only replacements for gangs of their domain that lost a node. Counted
// toward daemon.spares.per_domain; with per_domain 0, the label alone picks the spares.
inline constexpr char kSpareNodeLabel[] = "topogang.io/spare";

// Written by topogangd on `topogang drain`, read back on every list and watch.
inline constexpr char kDrainAnnotation[] = "topogang.io/drain";
// Written by topogangd on one node of a gang it started while that gang's pods waited in
// kube-scheduler's unschedulable pool: "<RFC 3339 time> <gang>". The change is the point (a
// cluster event that makes kube-scheduler retry the pods); the value only tells an operator why.
inline constexpr char kWakeAnnotation[] = "topogang.io/wake";

struct KubeNode {
  std::string name;
  std::map<std::string, std::string> labels;
  int gpus = 0;     // status.allocatable[resource] (capacity when allocatable lacks it)
  std::string sku;  // labels[nvidia.com/gpu.product]
  bool unschedulable = false;
  bool tainted = false;  // a node.kubernetes.io/* NoSchedule or NoExecute taint (broken node)
  std::string taint;     // the first such taint, "key=value:Effect"
  bool ready = true;     // Ready condition True (a node with no conditions counts as ready)
  // topogang drain (gRPC/CLI), kept on the Node as the kDrainAnnotation annotation so it
  // survives restarts and failovers: the API server is the source of truth.
  bool drained = false;
  std::string drain_reason;
  bool spare = false;  // labels[kSpareNodeLabel] == "true"

  NodeSpec ToSpec() const { return NodeSpec{name, gpus, sku, labels}; }
};

absl::StatusOr<KubeNode> ParseNode(const Json& node, absl::string_view resource);

}  // namespace topogang
