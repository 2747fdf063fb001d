#include "k8s/node_info.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "k8s/pod_info.h"
#include "k8s/quantity.h"

namespace topogang {

absl::StatusOr<KubeNode> ParseNode(const Json& node, absl::string_view resource) {
  if (!node.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Node: expected an object, got ", node.type_name()));
  }
  static const Json kEmpty = Json::object();
  KubeNode n;
  auto meta = JsonObject(node, "metadata", "Node.metadata");
  if (!meta.ok()) return meta.status();
  const Json& m = *meta ? **meta : kEmpty;
  auto name = JsonString(m, "name", "Node.metadata.name");
  if (!name.ok()) return name.status();
  if (name->empty()) return absl::InvalidArgumentError("Node.metadata.name: missing");
  n.name = *name;
  auto labels = ParseStringMap(m, "labels", "Node.metadata.labels");
  if (!labels.ok()) return labels.status();
  n.labels = std::move(*labels);
  if (auto it = n.labels.find(kGpuProductLabel); it != n.labels.end()) n.sku = it->second;
  if (auto it = n.labels.find(kSpareNodeLabel); it != n.labels.end())
    n.spare = it->second == "true";
  auto annotations = ParseStringMap(m, "annotations", "Node.metadata.annotations");
  if (!annotations.ok()) return annotations.status();
  if (auto it = annotations->find(kDrainAnnotation); it != annotations->end()) {
    n.drained = true;
    n.drain_reason = it->second.substr(0, 256);
  }

  auto spec = JsonObject(node, "spec", "Node.spec");
  if (!spec.ok()) return spec.status();
  if (*spec) {
    auto u = JsonBool(**spec, "unschedulable", "Node.spec.unschedulable");
    if (!u.ok()) return u.status();
    n.unschedulable = *u;
    auto taints = JsonArray(**spec, "taints", "Node.spec.taints");
    if (!taints.ok()) return taints.status();
    if (*taints) {
      for (const Json& t : **taints) {
        auto effect = JsonString(t, "effect", "Node.spec.taints[].effect");
        auto key = JsonString(t, "key", "Node.spec.taints[].key");
        auto value = JsonString(t, "value", "Node.spec.taints[].value");
        if (!effect.ok()) return effect.status();
        if (!key.ok()) return key.status();
        if (!value.ok()) return value.status();
        // Only the node lifecycle's own taints say the node is broken. Every other taint (a GPU
        // pool's nvidia.com/gpu=present:NoSchedule, a team's dedicated=...) is a per-pod
        // question kube-scheduler's TaintToleration answers: a node it does not offer is never
        // planned (GangLedger::Filter), a node it offers is usable.
        const bool lifecycle = absl::StartsWith(*key, "node.kubernetes.io/");
        if (lifecycle && (*effect == "NoSchedule" || *effect == "NoExecute")) {
          if (!n.tainted) {
            n.taint = absl::StrCat(*key, value->empty() ? "" : "=", *value, ":", *effect);
          }
          n.tainted = true;
        }
      }
    }
  }
  auto status = JsonObject(node, "status", "Node.status");
  if (!status.ok()) return status.status();
  if (*status) {
    int64_t gpus = -1;
    for (const char* field : {"allocatable", "capacity"}) {
      auto res = JsonObject(**status, field, absl::StrCat("Node.status.", field));
      if (!res.ok()) return res.status();
      if (*res == nullptr) continue;
      const Json* q = GoField(**res, resource);
      if (q == nullptr) continue;
      if (!q->is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("Node.status.", field, ".", resource, ": expected a quantity string"));
      }
      auto v = ParseIntegerQuantity(q->get<std::string>());
      if (!v.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("node ", n.name, ": Node.status.", field,
                                                       ".", resource, ": ", v.status().message()));
      }
      if (*v < 0 || *v > kMaxGpusPerNode) {
        return absl::InvalidArgumentError(absl::StrCat("node ", n.name, ": ", *v, " ", resource,
                                                       " is outside [0, ", kMaxGpusPerNode, "]"));
      }
      gpus = *v;
      break;
    }
    n.gpus = gpus < 0 ? 0 : static_cast<int>(gpus);
    auto conds = JsonArray(**status, "conditions", "Node.status.conditions");
    if (!conds.ok()) return conds.status();
    if (*conds) {
      for (const Json& c : **conds) {
        auto type = JsonString(c, "type", "Node.status.conditions[].type");
        auto st = JsonString(c, "status", "Node.status.conditions[].status");
        if (!type.ok()) return type.status();
        if (!st.ok()) return st.status();
        if (*type == "Ready") n.ready = *st == "True";
      }
    }
  }
  return n;
}

}  // namespace topogang
