#include "k8s/gang_conventions.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "scheduler/gang.h"

// Where each key comes from (upstream sources, read for this file):
//  - spec.schedulingGroup.podGroupName, spec.workloadRef{name,podGroup,podGroupReplicaKey}:
//    kubernetes staging/src/k8s.io/api/core/v1/types.go (KEP-4671, KEP-5832)
//  - PodGroup / Workload fields: kubernetes staging/src/k8s.io/api/scheduling/{v1beta1,
//    v1alpha3,v1alpha2,v1alpha1}/types.go
//  - scheduling.x-k8s.io/pod-group: scheduler-plugins apis/scheduling/v1alpha1/types.go
//    (PodGroupLabel = scheduling.GroupName + "/pod-group"); pod-group.scheduling.sigs.k8s.io is
//    the label of scheduler-plugins releases up to v0.19
//  - jobset.sigs.k8s.io/*: jobset api/jobset/v1alpha2/jobset_types.go (JobSetNameKey,
//    ReplicatedJobNameKey, JobIndexKey); batch.kubernetes.io/job-completion-index: the Job
//    controller (indexed Jobs)
//  - leaderworkerset.sigs.k8s.io/*: lws api/leaderworkerset/v1/leaderworkerset_types.go
//    (SetNameLabelKey, GroupIndexLabelKey, WorkerIndexLabelKey, SizeAnnotationKey)
//  - training.kubeflow.org/*: training-operator pkg/apis/kubeflow.org/v1/common_types.go
//    (JobNameLabel, ReplicaTypeLabel, ReplicaIndexLabel, OperatorNameLabel)

namespace topogang {
namespace {

using Kind = GangResolution::Kind;
using Strings = std::map<std::string, std::string>;

// What one convention says about the pod.
struct Claim {
  Kind kind = Kind::kNone;  // kNone: the convention is absent, or says "not a gang" (basic)
  bool basic = false;       // present and explicitly not a gang (a basic-policy PodGroup)
  GangMembership gang;
  std::string topology_key;
  std::string message;
  std::string source;  // for messages

  bool present() const { return kind != Kind::kNone || basic; }
};

Claim ErrorClaim(std::string source, std::string msg) {
  Claim c;
  c.kind = Kind::kError;
  c.source = std::move(source);
  c.message = std::move(msg);
  return c;
}

std::string Value(const Strings& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

// A non-negative index label ("" = absent = -1); malformed is an error.
absl::StatusOr<int> Index(const Strings& labels, const char* key) {
  std::string v = Value(labels, key);
  if (v.empty()) return -1;
  int n = 0;
  if (v.size() > 9 || !absl::SimpleAtoi(v, &n) || n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=\"", absl::string_view(v).substr(0, 32), "\": not an index"));
  }
  return n;
}

// Fetches an object; on failure fills *claim (waiting or error) and returns false.
bool Fetch(const GroupObjectLookup* lookup, GroupKind kind, const std::string& ns,
           const std::string& name, const std::string& source, GroupObject* out, Claim* claim) {
  const GroupKindInfo& info = KindInfo(kind);
  const std::string what = absl::StrCat(info.title, " ", ns, "/", name);
  if (name.empty() || name.size() > 253) {
    *claim = ErrorClaim(source, absl::StrCat(source, " names no valid ", info.title));
    return false;
  }
  if (lookup == nullptr) {
    *claim = ErrorClaim(source, absl::StrCat(source, " names ", what,
                                             ", which topogang can read only in cluster mode"));
    return false;
  }
  GroupObjectLookup::Result r = lookup->Find(kind, ns, name);
  switch (r.state) {
    case GroupObjectLookup::State::kFound:
      *out = std::move(r.object);
      return true;
    case GroupObjectLookup::State::kMissing:
      claim->kind = Kind::kWaiting;
      claim->source = source;
      claim->message =
          absl::StrCat("waiting for ", what, " (named by ", source, ") to size the gang");
      return false;
    case GroupObjectLookup::State::kUnavailable:
      *claim = ErrorClaim(source, absl::StrCat(source, " names ", what, ", but ", r.why));
      return false;
  }
  return false;
}

Claim GangClaim(std::string source, std::string id, int size, int index = -1) {
  Claim c;
  c.kind = Kind::kGang;
  c.source = source;
  c.gang.id = std::move(id);
  c.gang.size = size;
  c.gang.source = std::move(source);
  c.gang.index = index;
  return c;
}

Claim BasicClaim(std::string source) {
  Claim c;
  c.basic = true;
  c.source = std::move(source);
  return c;
}

Claim LabelClaim(LabelConvention convention, const PodInfo& pod) {
  const char* source = convention == LabelConvention::kTopogang ? kGangLabel : kKueueGroupLabel;
  auto g = ParseLabelGang(convention, pod.namespace_, pod.labels, pod.annotations);
  if (!g.ok()) return ErrorClaim(source, std::string(g.status().message()));
  if (!g->has_value()) return Claim{};
  Claim c = GangClaim(source, (*g)->id, (*g)->size);
  return c;
}

// 2. The upstream API: spec.schedulingGroup (1.36+) or spec.workloadRef (1.35).
Claim UpstreamClaim(const PodInfo& pod, const GroupObjectLookup* lookup) {
  const std::string& ns = pod.namespace_;
  if (!pod.scheduling_group.empty() && !pod.workload_ref.name.empty()) {
    return ErrorClaim("spec.schedulingGroup",
                      "spec.schedulingGroup and spec.workloadRef are both set; a pod names its "
                      "group one way");
  }
  Claim c;
  GroupObject obj;
  if (!pod.scheduling_group.empty()) {
    const std::string source = "spec.schedulingGroup.podGroupName";
    if (!Fetch(lookup, GroupKind::kPodGroup, ns, pod.scheduling_group, source, &obj, &c)) return c;
    if (!obj.gang) return BasicClaim(source);
    c = GangClaim(source, absl::StrCat(ns, "/", obj.name), obj.min_count);
    c.gang.upstream = true;
    c.topology_key = obj.topology_key;
    return c;
  }
  if (pod.workload_ref.name.empty()) return c;
  const std::string source = "spec.workloadRef";
  if (!Fetch(lookup, GroupKind::kWorkload, ns, pod.workload_ref.name, source, &obj, &c)) return c;
  for (const GroupPart& part : obj.parts) {
    if (part.name != pod.workload_ref.pod_group) continue;
    if (!part.gang) return BasicClaim(source);
    // The policy applies to each replica key separately (KEP-4671, v1alpha1).
    std::string id = absl::StrCat(ns, "/workload:", obj.name, "/", part.name);
    if (!pod.workload_ref.replica_key.empty()) {
      absl::StrAppend(&id, "/", pod.workload_ref.replica_key);
    }
    if (id.size() > 253) return ErrorClaim(source, "spec.workloadRef: names too long");
    c = GangClaim(source, id, part.pods);
    c.gang.upstream = true;
    return c;
  }
  return ErrorClaim(source, absl::StrCat("spec.workloadRef names pod group \"",
                                         pod.workload_ref.pod_group.substr(0, 63),
                                         "\", which "
                                         "Workload ",
                                         ns, "/", obj.name, " does not define"));
}

// 3. scheduler-plugins coscheduling.
Claim PluginsClaim(const PodInfo& pod, const GroupObjectLookup* lookup) {
  std::string name = Value(pod.labels, kPluginsPodGroupLabel);
  GroupKind kind = GroupKind::kPluginsPodGroup;
  std::string source = kPluginsPodGroupLabel;
  const std::string legacy = Value(pod.labels, kLegacyPluginsPodGroupLabel);
  if (name.empty() && !legacy.empty()) {
    name = legacy;
    kind = GroupKind::kLegacyPluginsPodGroup;
    source = kLegacyPluginsPodGroupLabel;
  }
  if (name.empty()) return Claim{};
  Claim c;
  GroupObject obj;
  if (!Fetch(lookup, kind, pod.namespace_, name, source, &obj, &c)) return c;
  if (!obj.gang) return BasicClaim(source);  // minMember 0: coscheduling does not gate it
  return GangClaim(source, absl::StrCat(pod.namespace_, "/", obj.name), obj.min_count);
}

// 5. JobSet (also Kubeflow Trainer v2, whose TrainJobs run as JobSets).
Claim JobSetClaim(const PodInfo& pod, const GroupObjectLookup* lookup) {
  const std::string js = Value(pod.labels, kJobSetNameKey);
  if (js.empty()) return Claim{};
  const std::string source = kJobSetNameKey;
  Claim c;
  GroupObject obj;
  if (!Fetch(lookup, GroupKind::kJobSet, pod.namespace_, js, source, &obj, &c)) return c;
  const std::string rj = Value(pod.labels, kJobSetReplicatedJobKey);
  const GroupPart* mine = nullptr;
  int offset = 0, total = 0, gpus = -1;
  bool uniform = true;
  for (const GroupPart& p : obj.parts) {
    if (p.name == rj) mine = &p;
    if (p.gpus == 0) continue;
    if (mine == nullptr) offset += p.pods;
    total += p.pods;
    uniform &= gpus < 0 || gpus == p.gpus;
    gpus = p.gpus;
  }
  if (mine == nullptr) {
    return ErrorClaim(source, absl::StrCat(kJobSetReplicatedJobKey, "=\"", rj.substr(0, 63),
                                           "\" is not a ReplicatedJob of JobSet ", obj.Key()));
  }
  if (mine->gpus == 0 || mine->pods == 0) {
    return ErrorClaim(source, absl::StrCat("ReplicatedJob ", rj, " of JobSet ", obj.Key(),
                                           " has no GPU pods in its template, but this pod "
                                           "requests ",
                                           pod.gpus));
  }
  auto job = Index(pod.labels, kJobSetJobIndexKey);
  auto completion = Index(pod.labels, kJobCompletionIndexKey);
  if (!job.ok()) return ErrorClaim(source, std::string(job.status().message()));
  if (!completion.ok()) return ErrorClaim(source, std::string(completion.status().message()));
  int index = -1;
  if (*job >= 0 && (mine->pods_per_replica == 1 || *completion >= 0)) {
    index = *job * mine->pods_per_replica + std::max(0, *completion);
  }
  // One gang for the whole JobSet, as JobSet's own gang policy does, unless its jobs start one
  // after another (a gang of all of them would wait forever) or its GPU pods differ in size.
  if (!obj.sequenced && uniform) {
    return GangClaim(source, absl::StrCat(pod.namespace_, "/jobset:", obj.name), total,
                     index < 0 ? -1 : offset + index);
  }
  return GangClaim(source, absl::StrCat(pod.namespace_, "/jobset:", obj.name, "/", rj), mine->pods,
                   index);
}

// 6. LeaderWorkerSet: one gang per group (the leader and its workers).
Claim LwsClaim(const PodInfo& pod, const GroupObjectLookup* lookup) {
  const std::string name = Value(pod.labels, kLwsNameKey);
  if (name.empty()) return Claim{};
  const std::string source = kLwsNameKey;
  auto group = Index(pod.labels, kLwsGroupIndexKey);
  auto worker = Index(pod.labels, kLwsWorkerIndexKey);
  if (!group.ok()) return ErrorClaim(source, std::string(group.status().message()));
  if (!worker.ok()) return ErrorClaim(source, std::string(worker.status().message()));
  if (*group < 0) {
    return ErrorClaim(source, absl::StrCat(kLwsGroupIndexKey,
                                           " is missing (set by the "
                                           "LeaderWorkerSet webhook on every pod)"));
  }
  Claim c;
  GroupObject obj;
  if (!Fetch(lookup, GroupKind::kLeaderWorkerSet, pod.namespace_, name, source, &obj, &c)) {
    return c;
  }
  int size = obj.min_count;
  const std::string ann = Value(pod.annotations, kLwsSizeKey);  // the size of this revision
  if (!ann.empty() && (!absl::SimpleAtoi(ann, &size) || size < 1 || size > kMaxGangMembers)) {
    return ErrorClaim(
        source, absl::StrCat(kLwsSizeKey, "=\"", ann.substr(0, 32), "\": expected a group size"));
  }
  const int leader_gpus = obj.parts.size() == 2 ? obj.parts[0].gpus : 0;
  const int worker_gpus = obj.parts.size() == 2 ? obj.parts[1].gpus : 0;
  // With startupPolicy LeaderReady the workers are created only once the leader runs: a gang of
  // both would wait forever, so the leader is placed alone and its workers form the gang. A
  // leader with a different GPU count is placed alone too (a gang's members are alike).
  const bool with_leader = !obj.leader_ready && leader_gpus > 0 &&
                           (worker_gpus == 0 || worker_gpus == leader_gpus || size == 1);
  const int workers = worker_gpus > 0 ? size - 1 : 0;
  const bool leader = *worker <= 0;
  if (leader && !with_leader) return Claim{};
  const int members = (with_leader ? 1 : 0) + workers;
  if (members < 1) return Claim{};
  const int index = leader ? 0 : (with_leader ? *worker : *worker - 1);
  if (index >= members) {
    return ErrorClaim(source, absl::StrCat(kLwsWorkerIndexKey, "=", *worker,
                                           " is outside group "
                                           "size ",
                                           size));
  }
  return GangClaim(source, absl::StrCat(pod.namespace_, "/lws:", name, "/", *group), members,
                   index);
}

// 7. PyTorchJob (Kubeflow training-operator v1).
Claim PyTorchClaim(const PodInfo& pod, const GroupObjectLookup* lookup) {
  std::string job = Value(pod.labels, kKubeflowJobNameKey);
  const bool owned = pod.controller.kind == "PyTorchJob" &&
                     pod.controller.api_version.rfind("kubeflow.org/", 0) == 0;
  if (job.empty() && owned) job = pod.controller.name;
  if (job.empty()) return Claim{};
  // The other Kubeflow kinds (TFJob, MPIJob, ...) share the job-name label; only PyTorchJob is
  // read (with gang scheduling on, the operator's scheduler-plugins PodGroup covers them all).
  if (!owned && Value(pod.labels, kKubeflowOperatorKey) != "pytorchjob-controller") {
    return Claim{};
  }
  const std::string source = kKubeflowJobNameKey;
  Claim c;
  GroupObject obj;
  if (!Fetch(lookup, GroupKind::kPyTorchJob, pod.namespace_, job, source, &obj, &c)) return c;
  // An elastic job without a minimum says nothing about when it can start: scheduled per pod.
  if (obj.elastic && obj.elastic_min_workers == 0) return Claim{};
  const std::string type = Value(pod.labels, kKubeflowReplicaTypeKey);
  auto replica = Index(pod.labels, kKubeflowReplicaIndexKey);
  if (!replica.ok()) return ErrorClaim(source, std::string(replica.status().message()));
  int total = 0, offset = -1, gpus = -1;
  for (const GroupPart& p : obj.parts) {
    if (p.gpus == 0) continue;
    if (gpus >= 0 && gpus != p.gpus) {
      return ErrorClaim(source, absl::StrCat("PyTorchJob ", obj.Key(),
                                             "'s replica types request "
                                             "different GPU counts (",
                                             gpus, " and ", p.gpus,
                                             "); a topogang gang's members request the same"));
    }
    gpus = p.gpus;
    if (absl::EqualsIgnoreCase(p.name, type)) offset = total;
    total += p.pods;
  }
  if (total < 1 || offset < 0) {
    return ErrorClaim(source,
                      absl::StrCat(kKubeflowReplicaTypeKey, "=\"", type.substr(0, 32),
                                   "\" is not a GPU replica type of PyTorchJob ", obj.Key()));
  }
  Claim claim = GangClaim(source, absl::StrCat(pod.namespace_, "/pytorchjob:", obj.name), total,
                          *replica < 0 ? -1 : offset + *replica);
  if (obj.elastic) {
    // elasticPolicy.minReplicas counts workers; the other GPU replicas (a Master) are needed too.
    int workers = 0;
    for (const GroupPart& p : obj.parts) {
      if (p.gpus > 0 && absl::EqualsIgnoreCase(p.name, "Worker")) workers += p.pods;
    }
    const int min = obj.elastic_min_workers + (total - workers);
    if (min < total) claim.gang.min_members = min;
  }
  return claim;
}

std::string Describe(const Claim& c) {
  if (c.basic) return absl::StrCat(c.source, " says it is not a gang (basic policy)");
  return absl::StrCat(c.source, " names gang ", c.gang.id, " of ", c.gang.size, " pods");
}

GangResolution FromClaim(Claim c) {
  GangResolution r;
  r.kind = c.kind;
  r.message = std::move(c.message);
  r.gang = std::move(c.gang);
  return r;
}

}  // namespace

GangResolution ResolveGang(const PodInfo& pod, const GroupObjectLookup* lookup,
                           const std::function<std::string(const std::string&)>& tier_for_label) {
  std::vector<Claim> claims = {LabelClaim(LabelConvention::kTopogang, pod),
                               UpstreamClaim(pod, lookup), PluginsClaim(pod, lookup),
                               LabelClaim(LabelConvention::kKueue, pod)};
  const auto decided = [&](std::vector<Claim>& list) -> std::optional<Claim> {
    for (Claim& c : list) {
      if (c.kind == Kind::kError) return std::move(c);
    }
    for (Claim& c : list) {
      if (c.kind == Kind::kWaiting) return std::move(c);
    }
    const Claim* winner = nullptr;
    bool upstream = false;
    for (const Claim& c : list) {
      if (!c.present()) continue;
      upstream |= c.gang.upstream;
      if (winner == nullptr) {
        winner = &c;
        continue;
      }
      const bool agree =
          winner->basic == c.basic &&
          (c.basic || (winner->gang.id == c.gang.id && winner->gang.size == c.gang.size));
      if (!agree) {
        return ErrorClaim(winner->source,
                          absl::StrCat("conflicting gang conventions: ", Describe(*winner),
                                       ", but ", Describe(c), "; remove one or make them agree"));
      }
    }
    if (winner == nullptr) return std::nullopt;
    Claim out = *winner;
    out.gang.upstream = upstream;
    return out;
  };
  std::optional<Claim> chosen = decided(claims);
  if (!chosen && pod.gpus > 0) {
    // Implicit conventions: only for GPU pods (a CPU launcher or initializer is no member).
    std::vector<Claim> derived = {JobSetClaim(pod, lookup), LwsClaim(pod, lookup),
                                  PyTorchClaim(pod, lookup)};
    chosen = decided(derived);
  }
  if (!chosen || chosen->basic) return GangResolution{};
  if (chosen->kind != Kind::kGang) return FromClaim(std::move(*chosen));
  GangMembership& g = chosen->gang;
  if (g.size < 1) {
    return FromClaim(ErrorClaim(chosen->source, absl::StrCat(chosen->source, " names gang ", g.id,
                                                             " with no member pods")));
  }
  if (!chosen->topology_key.empty()) {
    g.required_tier = tier_for_label ? tier_for_label(chosen->topology_key) : "";
    if (g.required_tier.empty()) {
      return FromClaim(ErrorClaim(
          chosen->source,
          absl::StrCat("PodGroup ", g.id, " requires topology key \"", chosen->topology_key,
                       "\", which is not the node label of any tier topogang is configured with; "
                       "add the tier or remove the constraint")));
    }
  }
  if (absl::Status s = ParsePlacementKeys(pod.labels, pod.annotations, &g); !s.ok()) {
    return FromClaim(ErrorClaim(chosen->source, std::string(s.message())));
  }
  return FromClaim(std::move(*chosen));
}

}  // namespace topogang
