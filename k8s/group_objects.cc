#include "k8s/group_objects.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "k8s/pod_info.h"
#include "scheduler/gang.h"

namespace topogang {
namespace {

const std::vector<GroupKindInfo>& Table() {
  static const auto* t = new std::vector<GroupKindInfo>{
      // k8s: staging/src/k8s.io/api/scheduling/{v1beta1,v1alpha3,v1alpha2}/types.go
      {GroupKind::kPodGroup,
       "scheduling.k8s.io",
       {"v1beta1", "v1alpha3", "v1alpha2"},
       "podgroups",
       "PodGroup (scheduling.k8s.io)"},
      // k8s: staging/src/k8s.io/api/scheduling/v1alpha1/types.go (Kubernetes 1.35)
      {GroupKind::kWorkload,
       "scheduling.k8s.io",
       {"v1alpha1"},
       "workloads",
       "Workload (scheduling.k8s.io/v1alpha1)"},
      // scheduler-plugins: apis/scheduling/v1alpha1/types.go
      {GroupKind::kPluginsPodGroup,
       "scheduling.x-k8s.io",
       {"v1alpha1"},
       "podgroups",
       "PodGroup (scheduling.x-k8s.io)"},
      {GroupKind::kLegacyPluginsPodGroup,
       "scheduling.sigs.k8s.io",
       {"v1alpha1"},
       "podgroups",
       "PodGroup (scheduling.sigs.k8s.io)"},
      // jobset: api/jobset/v1alpha2/groupversion_info.go
      {GroupKind::kJobSet, "jobset.x-k8s.io", {"v1alpha2"}, "jobsets", "JobSet"},
      // lws: api/leaderworkerset/v1/leaderworkerset_types.go
      {GroupKind::kLeaderWorkerSet,
       "leaderworkerset.x-k8s.io",
       {"v1"},
       "leaderworkersets",
       "LeaderWorkerSet"},
      // training-operator: pkg/apis/kubeflow.org/v1/pytorch_types.go
      {GroupKind::kPyTorchJob, "kubeflow.org", {"v1"}, "pytorchjobs", "PyTorchJob"},
  };
  return *t;
}

absl::Status Bad(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

// An int32 count field in [lo, kMaxGangMembers]; `def` when absent.
absl::StatusOr<int> Count(const Json& obj, absl::string_view key, absl::string_view what, int def,
                          int lo) {
  auto v = JsonInt(obj, key, what);
  if (!v.ok()) return v.status();
  if (GoField(obj, key) == nullptr) return def;
  if (*v < lo || *v > kMaxGangMembers) {
    return Bad(what, absl::StrCat(*v, " is outside [", lo, ", ", kMaxGangMembers, "]"));
  }
  return static_cast<int>(*v);
}

// GPUs one pod of a pod template requests (the same arithmetic as for a Pod).
absl::StatusOr<int> TemplateGpus(const Json* tmpl, absl::string_view resource,
                                 absl::string_view what) {
  if (tmpl == nullptr) return 0;
  const Json* spec = GoField(*tmpl, "spec");
  if (spec == nullptr) return 0;
  Json pod = {{"metadata", {{"name", "template"}}}, {"spec", *spec}};
  auto p = ParsePod(pod, resource);
  if (!p.ok()) return Bad(what, p.status().message());
  return static_cast<int>(p->gpus);
}

// spec.schedulingPolicy {basic | gang{minCount}} of a PodGroup or a Workload template.
absl::Status ReadPolicy(const Json* policy, absl::string_view what, bool* gang, int* min_count) {
  const Json* g = policy ? GoField(*policy, "gang") : nullptr;
  if (g == nullptr) {
    *gang = false;  // basic, or no policy: pods are scheduled one by one
    *min_count = 0;
    return absl::OkStatus();
  }
  *gang = true;
  auto n = Count(*g, "minCount", absl::StrCat(what, ".gang.minCount"), 0, 1);
  if (!n.ok()) return n.status();
  if (*n < 1) return Bad(absl::StrCat(what, ".gang.minCount"), "missing");
  *min_count = *n;
  return absl::OkStatus();
}

// spec.schedulingConstraints.topology[0].key; the v1alpha2 revision that named it
// topologyConstraints[].topologyKey is read too (anchors-2026 §1.2: parse both).
absl::StatusOr<std::string> TopologyKey(const Json& spec, absl::string_view what) {
  const Json* c = GoField(spec, "schedulingConstraints");
  if (c == nullptr) return std::string();
  for (auto [list, field] :
       {std::pair{"topology", "key"}, std::pair{"topologyConstraints", "topologyKey"}}) {
    auto arr = JsonArray(*c, list, absl::StrCat(what, ".schedulingConstraints.", list));
    if (!arr.ok()) return arr.status();
    if (*arr == nullptr || (*arr)->empty()) continue;
    auto key = JsonString((**arr)[0], field,
                          absl::StrCat(what, ".schedulingConstraints.", list, "[0].", field));
    if (!key.ok()) return key.status();
    if (key->size() > 316) return Bad(what, "topology key too long");
    return *key;
  }
  return std::string();
}

absl::Status ParsePodGroup(const Json& spec, GroupObject* g) {
  if (g->kind == GroupKind::kPodGroup) {
    auto policy = JsonObject(spec, "schedulingPolicy", "PodGroup.spec.schedulingPolicy");
    if (!policy.ok()) return policy.status();
    if (absl::Status s =
            ReadPolicy(*policy, "PodGroup.spec.schedulingPolicy", &g->gang, &g->min_count);
        !s.ok()) {
      return s;
    }
    auto key = TopologyKey(spec, "PodGroup.spec");
    if (!key.ok()) return key.status();
    g->topology_key = *key;
    return absl::OkStatus();
  }
  // scheduler-plugins: spec.minMember (omitempty: absent means 0, which coscheduling treats as
  // "no gang").
  auto n = Count(spec, "minMember", "PodGroup.spec.minMember", 0, 0);
  if (!n.ok()) return n.status();
  g->min_count = *n;
  g->gang = *n > 0;
  return absl::OkStatus();
}

absl::Status ParseWorkload(const Json& spec, GroupObject* g) {
  // v1alpha1 (1.35): spec.podGroups[{name, policy{basic|gang{minCount}}}].
  auto arr = JsonArray(spec, "podGroups", "Workload.spec.podGroups");
  if (!arr.ok()) return arr.status();
  if (*arr == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < (*arr)->size() && i < 64; ++i) {
    const std::string what = absl::StrCat("Workload.spec.podGroups[", i, "]");
    const Json& pg = (**arr)[i];
    GroupPart part;
    auto name = JsonString(pg, "name", what + ".name");
    if (!name.ok()) return name.status();
    part.name = *name;
    auto policy = JsonObject(pg, "policy", what + ".policy");
    if (!policy.ok()) return policy.status();
    if (absl::Status s = ReadPolicy(*policy, what + ".policy", &part.gang, &part.pods); !s.ok()) {
      return s;
    }
    g->parts.push_back(std::move(part));
  }
  return absl::OkStatus();
}

absl::Status ParseJobSet(const Json& spec, absl::string_view resource, GroupObject* g) {
  // jobset: api/jobset/v1alpha2/jobset_types.go (ReplicatedJob{name, replicas, template, dependsOn}
  // and StartupPolicy{startupPolicyOrder}).
  auto arr = JsonArray(spec, "replicatedJobs", "JobSet.spec.replicatedJobs");
  if (!arr.ok()) return arr.status();
  const Json* startup = GoField(spec, "startupPolicy");
  if (startup != nullptr) {
    auto order = JsonString(*startup, "startupPolicyOrder", "JobSet.spec.startupPolicy");
    if (!order.ok()) return order.status();
    g->sequenced = *order == "InOrder";
  }
  if (*arr == nullptr) return absl::OkStatus();
  int64_t total = 0;
  for (size_t i = 0; i < (*arr)->size() && i < 64; ++i) {
    const std::string what = absl::StrCat("JobSet.spec.replicatedJobs[", i, "]");
    const Json& rj = (**arr)[i];
    GroupPart part;
    auto name = JsonString(rj, "name", what + ".name");
    if (!name.ok()) return name.status();
    part.name = *name;
    auto replicas = Count(rj, "replicas", what + ".replicas", 1, 0);
    if (!replicas.ok()) return replicas.status();
    const Json* depends = GoField(rj, "dependsOn");
    if (depends != nullptr && depends->is_array() && !depends->empty()) g->sequenced = true;
    const Json* job = GoField(rj, "template");
    const Json* job_spec = job ? GoField(*job, "spec") : nullptr;
    int per_job = 1;
    if (job_spec != nullptr) {
      // A Job runs min(parallelism, completions) pods at once; both default to 1.
      auto par = Count(*job_spec, "parallelism", what + ".template.spec.parallelism", 1, 0);
      if (!par.ok()) return par.status();
      auto comp = Count(*job_spec, "completions", what + ".template.spec.completions", *par, 0);
      if (!comp.ok()) return comp.status();
      per_job = std::min(*par, *comp);
    }
    const int64_t pods = static_cast<int64_t>(*replicas) * per_job;
    total += pods;
    if (total > kMaxGangMembers) {
      return Bad("JobSet.spec.replicatedJobs",
                 absl::StrCat("more than ", kMaxGangMembers, " pods"));
    }
    part.pods = static_cast<int>(pods);
    part.pods_per_replica = per_job;
    auto gpus = TemplateGpus(job_spec ? GoField(*job_spec, "template") : nullptr, resource,
                             what + ".template.spec.template");
    if (!gpus.ok()) return gpus.status();
    part.gpus = *gpus;
    g->parts.push_back(std::move(part));
  }
  return absl::OkStatus();
}

absl::Status ParseLeaderWorkerSet(const Json& spec, absl::string_view resource, GroupObject* g) {
  // lws: api/leaderworkerset/v1/leaderworkerset_types.go (leaderWorkerTemplate{leaderTemplate,
  // workerTemplate, size}, startupPolicy LeaderCreated|LeaderReady).
  auto policy = JsonString(spec, "startupPolicy", "LeaderWorkerSet.spec.startupPolicy");
  if (!policy.ok()) return policy.status();
  g->leader_ready = *policy == "LeaderReady";
  auto lwt = JsonObject(spec, "leaderWorkerTemplate", "LeaderWorkerSet.spec.leaderWorkerTemplate");
  if (!lwt.ok()) return lwt.status();
  static const Json kEmpty = Json::object();
  const Json& t = *lwt ? **lwt : kEmpty;
  auto size = Count(t, "size", "LeaderWorkerSet.spec.leaderWorkerTemplate.size", 1, 1);
  if (!size.ok()) return size.status();
  g->min_count = *size;
  const Json* worker = GoField(t, "workerTemplate");
  const Json* leader = GoField(t, "leaderTemplate");
  auto wg =
      TemplateGpus(worker, resource, "LeaderWorkerSet.spec.leaderWorkerTemplate.workerTemplate");
  if (!wg.ok()) return wg.status();
  auto lg = leader ? TemplateGpus(leader, resource,
                                  "LeaderWorkerSet.spec.leaderWorkerTemplate.leaderTemplate")
                   : wg;
  if (!lg.ok()) return lg.status();
  g->parts.push_back({"leader", true, 1, *lg, 1});
  g->parts.push_back({"worker", true, *size - 1, *wg, 1});
  return absl::OkStatus();
}

absl::Status ParsePyTorchJob(const Json& spec, absl::string_view resource, GroupObject* g) {
  // training-operator: pkg/apis/kubeflow.org/v1/pytorch_types.go (pytorchReplicaSpecs map of
  // replica type -> {replicas, template}, elasticPolicy).
  const Json* elastic = GoField(spec, "elasticPolicy");
  g->elastic = elastic != nullptr;
  if (elastic != nullptr) {
    if (!elastic->is_object()) return Bad("PyTorchJob.spec.elasticPolicy", "expected an object");
    auto min = Count(*elastic, "minReplicas", "PyTorchJob.spec.elasticPolicy.minReplicas", 0, 1);
    if (!min.ok()) return min.status();
    g->elastic_min_workers = *min;
  }
  auto specs = JsonObject(spec, "pytorchReplicaSpecs", "PyTorchJob.spec.pytorchReplicaSpecs");
  if (!specs.ok()) return specs.status();
  if (*specs == nullptr) return absl::OkStatus();
  int64_t total = 0;
  int n = 0;
  for (auto it = (*specs)->begin(); it != (*specs)->end() && n < 16; ++it, ++n) {
    const std::string what = absl::StrCat("PyTorchJob.spec.pytorchReplicaSpecs.", it.key());
    if (!it->is_object()) return Bad(what, "expected an object");
    GroupPart part;
    part.name = it.key();
    auto replicas = Count(*it, "replicas", what + ".replicas", 1, 0);
    if (!replicas.ok()) return replicas.status();
    part.pods = *replicas;
    total += *replicas;
    if (total > kMaxGangMembers) {
      return Bad("PyTorchJob.spec", absl::StrCat("more than ", kMaxGangMembers, " pods"));
    }
    auto gpus = TemplateGpus(GoField(*it, "template"), resource, what + ".template");
    if (!gpus.ok()) return gpus.status();
    part.gpus = *gpus;
    g->parts.push_back(std::move(part));
  }
  // Master first, then the others in name order: the order ranks are given in.
  std::stable_sort(g->parts.begin(), g->parts.end(), [](const GroupPart& a, const GroupPart& b) {
    return (a.name == "Master") > (b.name == "Master");
  });
  return absl::OkStatus();
}

}  // namespace

const std::vector<GroupKindInfo>& AllGroupKinds() { return Table(); }

const GroupKindInfo& KindInfo(GroupKind kind) { return Table()[static_cast<int>(kind)]; }

absl::StatusOr<GroupObject> ParseGroupObject(GroupKind kind, const Json& obj,
                                             absl::string_view gpu_resource) {
  const GroupKindInfo& info = KindInfo(kind);
  if (!obj.is_object()) return Bad(info.title, "expected an object");
  GroupObject g;
  g.kind = kind;
  auto meta = JsonObject(obj, "metadata", "metadata");
  if (!meta.ok()) return meta.status();
  if (*meta == nullptr) return Bad(info.title, "metadata missing");
  auto name = JsonString(**meta, "name", "metadata.name");
  auto ns = JsonString(**meta, "namespace", "metadata.namespace");
  if (!name.ok()) return name.status();
  if (!ns.ok()) return ns.status();
  if (name->empty() || name->size() > 253) return Bad(info.title, "metadata.name is not a name");
  g.name = *name;
  g.namespace_ = ns->empty() ? "default" : *ns;
  auto spec_or = JsonObject(obj, "spec", "spec");
  if (!spec_or.ok()) return spec_or.status();
  static const Json kEmpty = Json::object();
  const Json& spec = *spec_or ? **spec_or : kEmpty;
  absl::Status s;
  switch (kind) {
    case GroupKind::kPodGroup:
    case GroupKind::kPluginsPodGroup:
    case GroupKind::kLegacyPluginsPodGroup:
      s = ParsePodGroup(spec, &g);
      break;
    case GroupKind::kWorkload:
      s = ParseWorkload(spec, &g);
      break;
    case GroupKind::kJobSet:
      s = ParseJobSet(spec, gpu_resource, &g);
      break;
    case GroupKind::kLeaderWorkerSet:
      s = ParseLeaderWorkerSet(spec, gpu_resource, &g);
      break;
    case GroupKind::kPyTorchJob:
      s = ParsePyTorchJob(spec, gpu_resource, &g);
      break;
  }
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(info.title, " ", g.Key(), ": ", s.message()));
  }
  return g;
}

}  // namespace topogang
