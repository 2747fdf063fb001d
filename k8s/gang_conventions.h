// Which gang a pod belongs to, from whatever convention its creator used, so existing training
// manifests become gangs with no topogang labels. Pure: group objects come through a lookup.
//
// Explicit conventions name a group directly (precedence high to low):
//   1. topogang.io/gang + topogang.io/gang-size                      (k8s/gang_labels.h)
//   2. spec.schedulingGroup.podGroupName -> PodGroup scheduling.k8s.io (1.36+), size
//      spec.schedulingPolicy.gang.minCount; or spec.workloadRef -> Workload v1alpha1 (1.35),
//      size spec.podGroups[podGroup].policy.gang.minCount, one gang per podGroupReplicaKey
//   3. scheduling.x-k8s.io/pod-group (or pod-group.scheduling.sigs.k8s.io) -> scheduler-plugins
//      PodGroup, size spec.minMember
//   4. kueue.x-k8s.io/pod-group-name + kueue.x-k8s.io/pod-group-total-count
// Every explicit convention present must name the same gang (namespace/name) with the same size;
// otherwise the pod gets a conflict error, never a guess. The highest one is reported as source.
//
// Implicit conventions are derived from a workload controller's labels; they apply only when no
// explicit convention is present (a controller's gang integration, e.g. training-operator's
// scheduler-plugins PodGroup, is the authority), and only to pods that request GPUs:
//   5. JobSet (jobset.sigs.k8s.io/jobset-name): the whole JobSet, or one gang per ReplicatedJob
//      when its jobs start one after another (InOrder, dependsOn) or request different GPUs
//   6. LeaderWorkerSet (leaderworkerset.sigs.k8s.io/name + group-index): one gang per group
//   7. PyTorchJob (training.kubeflow.org/job-name, operator pytorchjob-controller): the job
// Sizes count the pods that request GPUs, from the owner object's pod templates.
//
// A group object that has not arrived yet makes the pod wait ("waiting for PodGroup X") rather
// than guess its size. topogang.io/required-tier etc. apply to the gang whatever named it; a
// PodGroup's topology key becomes the required tier when it is a configured tier label.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "k8s/gang_labels.h"
#include "k8s/group_objects.h"
#include "k8s/pod_info.h"

namespace topogang {

// The label keys read (each cited at its definition in gang_conventions.cc).
inline constexpr char kPluginsPodGroupLabel[] = "scheduling.x-k8s.io/pod-group";
inline constexpr char kLegacyPluginsPodGroupLabel[] = "pod-group.scheduling.sigs.k8s.io";
inline constexpr char kJobSetNameKey[] = "jobset.sigs.k8s.io/jobset-name";
inline constexpr char kJobSetReplicatedJobKey[] = "jobset.sigs.k8s.io/replicatedjob-name";
inline constexpr char kJobSetJobIndexKey[] = "jobset.sigs.k8s.io/job-index";
inline constexpr char kJobCompletionIndexKey[] = "batch.kubernetes.io/job-completion-index";
inline constexpr char kLwsNameKey[] = "leaderworkerset.sigs.k8s.io/name";
inline constexpr char kLwsGroupIndexKey[] = "leaderworkerset.sigs.k8s.io/group-index";
inline constexpr char kLwsWorkerIndexKey[] = "leaderworkerset.sigs.k8s.io/worker-index";
inline constexpr char kLwsSizeKey[] = "leaderworkerset.sigs.k8s.io/size";
inline constexpr char kKubeflowJobNameKey[] = "training.kubeflow.org/job-name";
inline constexpr char kKubeflowReplicaTypeKey[] = "training.kubeflow.org/replica-type";
inline constexpr char kKubeflowReplicaIndexKey[] = "training.kubeflow.org/replica-index";
inline constexpr char kKubeflowOperatorKey[] = "training.kubeflow.org/operator-name";

// The group objects the cluster serves, as last seen (kube/group_objects_watch.h in cluster mode).
class GroupObjectLookup {
 public:
  enum class State {
    kFound,
    kMissing,     // served (or not discovered yet), but this object has not arrived
    kUnavailable  // the cluster does not serve the kind, or topogang may not read it: see `why`
  };
  struct Result {
    State state = State::kMissing;
    GroupObject object;
    std::string why;
  };
  virtual ~GroupObjectLookup() = default;
  virtual Result Find(GroupKind kind, const std::string& ns, const std::string& name) const = 0;
};

struct GangResolution {
  enum class Kind { kNone, kGang, kWaiting, kError };
  Kind kind = Kind::kNone;
  GangMembership gang;  // kGang
  std::string message;  // kWaiting: what it waits for; kError: why (a conflict or bad keys)
};

// `lookup` may be null (standalone mode: conventions that need an object are errors).
// `tier_for_label` maps a node label to the configured tier built from it ("" when none).
GangResolution ResolveGang(const PodInfo& pod, const GroupObjectLookup* lookup,
                           const std::function<std::string(const std::string&)>& tier_for_label);

}  // namespace topogang
