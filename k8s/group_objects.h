// The objects other controllers create to describe a gang, reduced to what topogang needs to size
// it: upstream PodGroups and Workloads (KEP-4671), scheduler-plugins PodGroups, JobSets,
// LeaderWorkerSets and PyTorchJobs. Parsing only; kube/group_objects_watch.h keeps them current
// and gang_conventions.h decides which one names a pod's gang.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json_util.h"

namespace topogang {

enum class GroupKind {
  kPodGroup,         // scheduling.k8s.io PodGroup (v1beta1, v1alpha3, v1alpha2): Kubernetes 1.36+
  kWorkload,         // scheduling.k8s.io/v1alpha1 Workload: Kubernetes 1.35 (pods' workloadRef)
  kPluginsPodGroup,  // scheduling.x-k8s.io/v1alpha1 PodGroup (scheduler-plugins coscheduling)
  kLegacyPluginsPodGroup,  // scheduling.sigs.k8s.io/v1alpha1 PodGroup (scheduler-plugins <= 0.19)
  kJobSet,                 // jobset.x-k8s.io/v1alpha2 JobSet
  kLeaderWorkerSet,        // leaderworkerset.x-k8s.io/v1 LeaderWorkerSet
  kPyTorchJob,             // kubeflow.org/v1 PyTorchJob (training-operator)
};
inline constexpr int kNumGroupKinds = 7;

// Where the API server serves a kind: versions in order of preference (the first one served is
// watched).
struct GroupKindInfo {
  GroupKind kind;
  const char* group;
  std::vector<const char*> versions;
  const char* resource;  // plural, as in the URL and in RBAC rules
  const char* title;     // for messages: "PodGroup (scheduling.k8s.io)"
};
const GroupKindInfo& KindInfo(GroupKind kind);
const std::vector<GroupKindInfo>& AllGroupKinds();

// One group of pods inside an object: a Workload pod group, a JobSet ReplicatedJob, a PyTorchJob
// replica type, the leader or the workers of a LeaderWorkerSet group.
struct GroupPart {
  std::string name;
  bool gang = true;  // Workload: false when the pod group's policy is `basic`
  int pods = 0;      // pods of this part (Workload: gang minCount)
  int gpus = 0;      // GPUs each pod of the part requests (from its pod template; 0 = CPU only)
  int pods_per_replica = 1;  // JobSet: pods of each Job (min(parallelism, completions))
};

// The summary of one object. Counts are bounded by kMaxGangMembers; absurd values are errors.
struct GroupObject {
  GroupKind kind = GroupKind::kPodGroup;
  std::string namespace_;
  std::string name;
  bool gang = true;          // PodGroup: false for the `basic` policy
  int min_count = 0;         // PodGroup minCount / minMember; LWS: group size
  std::string topology_key;  // PodGroup: spec.schedulingConstraints.topology[0].key
  std::vector<GroupPart> parts;
  bool sequenced = false;     // JobSet: InOrder startup or dependsOn (jobs start one after another)
  bool leader_ready = false;  // LWS: startupPolicy LeaderReady (workers created once it is Ready)
  bool elastic = false;       // PyTorchJob: elasticPolicy set (the worker count changes)
  int elastic_min_workers = 0;  // PyTorchJob: elasticPolicy.minReplicas (0: not given)

  std::string Key() const { return namespace_ + "/" + name; }
};

// Reads `obj` (an item of a list or a watch event) as `kind`; `gpu_resource` counts the GPUs of
// pod templates. Errors name the field.
absl::StatusOr<GroupObject> ParseGroupObject(GroupKind kind, const Json& obj,
                                             absl::string_view gpu_resource);

}  // namespace topogang
