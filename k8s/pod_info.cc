#include "k8s/pod_info.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "k8s/quantity.h"

namespace topogang {

absl::StatusOr<std::map<std::string, std::string>> ParseStringMap(const Json& obj,
                                                                  absl::string_view key,
                                                                  absl::string_view what) {
  std::map<std::string, std::string> out;
  auto m = JsonObject(obj, key, what);
  if (!m.ok()) return m.status();
  if (*m == nullptr) return out;
  for (auto it = (*m)->begin(); it != (*m)->end(); ++it) {
    if (it->is_null()) continue;
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ".", it.key(), ": expected a string, got ", it->type_name()));
    }
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

namespace {

struct ContainerRequest {
  int64_t gpus = 0;
  bool mentioned = false;
  bool restartable = false;  // restartPolicy: Always on an init container (a sidecar)
};

absl::StatusOr<std::optional<int64_t>> ResourceIn(const Json& list, absl::string_view resource,
                                                  absl::string_view what, bool* mentioned) {
  const Json* v = GoField(list, resource);
  if (v == nullptr) return std::optional<int64_t>();
  *mentioned = true;
  if (!v->is_string()) {
    // Quantities are serialized as strings; accept plain JSON integers too (hand-written JSON).
    if (v->is_number_integer()) return std::optional<int64_t>(v->get<int64_t>());
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected a quantity string, got ", v->type_name()));
  }
  auto q = ParseIntegerQuantity(v->get<std::string>());
  if (!q.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", q.status().message()));
  return std::optional<int64_t>(*q);
}

absl::StatusOr<ContainerRequest> ParseContainer(const Json& c, absl::string_view resource,
                                                const std::string& what) {
  ContainerRequest out;
  if (!c.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": expected an object"));
  }
  auto policy = JsonString(c, "restartPolicy", what + ".restartPolicy");
  if (!policy.ok()) return policy.status();
  out.restartable = *policy == "Always";
  auto res = JsonObject(c, "resources", what + ".resources");
  if (!res.ok()) return res.status();
  if (*res == nullptr) return out;
  auto req = JsonObject(**res, "requests", what + ".resources.requests");
  if (!req.ok()) return req.status();
  auto lim = JsonObject(**res, "limits", what + ".resources.limits");
  if (!lim.ok()) return lim.status();
  std::optional<int64_t> r, l;
  if (*req != nullptr) {
    auto v = ResourceIn(**req, resource, what + ".resources.requests", &out.mentioned);
    if (!v.ok()) return v.status();
    r = *v;
  }
  if (*lim != nullptr) {
    auto v = ResourceIn(**lim, resource, what + ".resources.limits", &out.mentioned);
    if (!v.ok()) return v.status();
    l = *v;
  }
  int64_t g = r ? *r : (l ? *l : 0);
  if (g < 0 || g > kMaxGpusPerPod) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", resource, " request ", g,
                                                   " is outside [0, ", kMaxGpusPerPod, "]"));
  }
  out.gpus = g;
  return out;
}

absl::StatusOr<std::vector<ContainerRequest>> ParseContainers(const Json& spec,
                                                              absl::string_view key,
                                                              absl::string_view resource) {
  std::vector<ContainerRequest> out;
  auto arr = JsonArray(spec, key, absl::StrCat("Pod.spec.", key));
  if (!arr.ok()) return arr.status();
  if (*arr == nullptr) return out;
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    auto c = ParseContainer((**arr)[i], resource, absl::StrCat("Pod.spec.", key, "[", i, "]"));
    if (!c.ok()) return c.status();
    out.push_back(*c);
  }
  return out;
}

// The controller among metadata.ownerReferences (kind, name, apiVersion), if any.
absl::Status ParseController(const Json& meta, PodInfo::OwnerRef* out) {
  auto refs = JsonArray(meta, "ownerReferences", "Pod.metadata.ownerReferences");
  if (!refs.ok()) return refs.status();
  if (*refs == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < (*refs)->size(); ++i) {
    const Json& r = (**refs)[i];
    const std::string what = absl::StrCat("Pod.metadata.ownerReferences[", i, "]");
    auto controller = JsonBool(r, "controller", what + ".controller");
    if (!controller.ok()) return controller.status();
    if (!*controller) continue;
    auto api = JsonString(r, "apiVersion", what + ".apiVersion");
    auto kind = JsonString(r, "kind", what + ".kind");
    auto name = JsonString(r, "name", what + ".name");
    for (auto* v : {&api, &kind, &name}) {
      if (!v->ok()) return v->status();
    }
    *out = {*api, *kind, *name};
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

// spec.schedulingGroup.podGroupName and spec.workloadRef{name, podGroup, podGroupReplicaKey}.
absl::Status ParseGroupRefs(const Json& spec, PodInfo* p) {
  auto group = JsonObject(spec, "schedulingGroup", "Pod.spec.schedulingGroup");
  if (!group.ok()) return group.status();
  if (*group) {
    auto name = JsonString(**group, "podGroupName", "Pod.spec.schedulingGroup.podGroupName");
    if (!name.ok()) return name.status();
    p->scheduling_group = *name;
  }
  auto ref = JsonObject(spec, "workloadRef", "Pod.spec.workloadRef");
  if (!ref.ok()) return ref.status();
  if (*ref) {
    auto name = JsonString(**ref, "name", "Pod.spec.workloadRef.name");
    auto pg = JsonString(**ref, "podGroup", "Pod.spec.workloadRef.podGroup");
    auto key = JsonString(**ref, "podGroupReplicaKey", "Pod.spec.workloadRef.podGroupReplicaKey");
    for (auto* v : {&name, &pg, &key}) {
      if (!v->ok()) return v->status();
    }
    p->workload_ref = {*name, *pg, *key};
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PodInfo> ParsePod(const Json& pod, absl::string_view resource) {
  if (!pod.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Pod: expected an object, got ", pod.type_name()));
  }
  PodInfo p;
  static const Json kEmpty = Json::object();
  auto meta = JsonObject(pod, "metadata", "Pod.metadata");
  if (!meta.ok()) return meta.status();
  const Json& m = *meta ? **meta : kEmpty;
  auto name = JsonString(m, "name", "Pod.metadata.name");
  auto ns = JsonString(m, "namespace", "Pod.metadata.namespace");
  auto uid = JsonString(m, "uid", "Pod.metadata.uid");
  for (auto* s : {&name, &ns, &uid}) {
    if (!s->ok()) return s->status();
  }
  p.name = *name;
  p.namespace_ = ns->empty() ? "default" : *ns;
  p.uid = *uid;
  if (p.name.empty()) return absl::InvalidArgumentError("Pod.metadata.name: missing");
  auto labels = ParseStringMap(m, "labels", "Pod.metadata.labels");
  if (!labels.ok()) return labels.status();
  p.labels = std::move(*labels);
  auto ann = ParseStringMap(m, "annotations", "Pod.metadata.annotations");
  if (!ann.ok()) return ann.status();
  p.annotations = std::move(*ann);

  if (absl::Status st = ParseController(m, &p.controller); !st.ok()) return st;

  auto spec = JsonObject(pod, "spec", "Pod.spec");
  if (!spec.ok()) return spec.status();
  const Json& s = *spec ? **spec : kEmpty;
  if (absl::Status st = ParseGroupRefs(s, &p); !st.ok()) return st;
  auto node = JsonString(s, "nodeName", "Pod.spec.nodeName");
  if (!node.ok()) return node.status();
  p.node_name = *node;
  auto sched = JsonString(s, "schedulerName", "Pod.spec.schedulerName");
  if (!sched.ok()) return sched.status();
  // The API server defaults an absent schedulerName to "default-scheduler"
  // (k8s.io/kubernetes pkg/apis/core/v1/defaults.go, SetDefaults_PodSpec).
  p.scheduler_name = sched->empty() ? "default-scheduler" : *sched;
  // spec.priority is what the Priority admission plugin resolved from priorityClassName; kube-
  // scheduler's PrioritySort orders by it, and so does topogang's gang queue.
  if (s.contains("priority") && !s["priority"].is_null()) {
    auto prio = JsonInt(s, "priority", "Pod.spec.priority");
    if (!prio.ok()) return prio.status();
    if (*prio < INT32_MIN || *prio > INT32_MAX) {
      return absl::InvalidArgumentError("Pod.spec.priority: out of the int32 range");
    }
    p.priority = static_cast<int>(*prio);
  }
  if (s.contains("activeDeadlineSeconds") && !s["activeDeadlineSeconds"].is_null()) {
    auto deadline = JsonInt(s, "activeDeadlineSeconds", "Pod.spec.activeDeadlineSeconds");
    if (!deadline.ok()) return deadline.status();
    // The API server accepts only positive values; anything else is ignored, not fatal: this
    // pod may be running, and its GPUs must still be counted.
    p.active_deadline_seconds = *deadline > 0 ? *deadline : 0;
  }
  // Read leniently: it only orders the queue, and a pod must parse whatever it says here (a
  // running pod's GPUs are counted from this parse).
  if (const Json* gates = GoField(s, "schedulingGates"); gates && gates->is_array()) {
    p.gated = !gates->empty();
  }
  auto status = JsonObject(pod, "status", "Pod.status");
  if (!status.ok()) return status.status();
  if (*status) {
    auto phase = JsonString(**status, "phase", "Pod.status.phase");
    if (!phase.ok()) return phase.status();
    p.phase = *phase;
  }

  auto apps = ParseContainers(s, "containers", resource);
  if (!apps.ok()) return apps.status();
  auto inits = ParseContainers(s, "initContainers", resource);
  if (!inits.ok()) return inits.status();
  int64_t app_sum = 0, init_max = 0, sidecars = 0;
  for (const ContainerRequest& c : *apps) {
    app_sum += c.gpus;
    p.mentions_resource |= c.mentioned;
  }
  for (const ContainerRequest& c : *inits) {
    p.mentions_resource |= c.mentioned;
    if (c.restartable) {
      sidecars += c.gpus;
      init_max = std::max(init_max, sidecars);
    } else {
      init_max = std::max(init_max, c.gpus + sidecars);
    }
  }
  int64_t total = std::max(app_sum + sidecars, init_max);
  auto overhead = JsonObject(s, "overhead", "Pod.spec.overhead");
  if (!overhead.ok()) return overhead.status();
  if (*overhead) {
    bool mentioned = false;
    auto v = ResourceIn(**overhead, resource, "Pod.spec.overhead", &mentioned);
    if (!v.ok()) return v.status();
    if (v->has_value() && **v > 0) {
      if (**v > kMaxGpusPerPod) return absl::InvalidArgumentError("Pod.spec.overhead: absurd");
      total += **v;
    }
  }
  if (total > kMaxGpusPerPod) {
    return absl::InvalidArgumentError(absl::StrCat("pod ", p.Key(), " requests ", total, " ",
                                                   resource, "; at most ", kMaxGpusPerPod,
                                                   " per pod is supported"));
  }
  p.gpus = total;
  return p;
}

}  // namespace topogang
