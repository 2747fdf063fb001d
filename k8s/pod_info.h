// The few facts about a core/v1 Pod that topogang needs, read from its JSON: identity, labels and
// annotations, group references and controller (gang membership), where it is bound, its phase, and
// its GPU request computed the way the scheduler does.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json_util.h"

namespace topogang {

// Requests above this many GPUs for one pod are rejected as absurd (no node has that many).
inline constexpr int64_t kMaxGpusPerPod = 128;

struct PodInfo {
  std::string name;
  std::string namespace_;  // "default" when absent
  std::string uid;
  std::string node_name;       // spec.nodeName ("" = not bound)
  std::string scheduler_name;  // spec.schedulerName ("default-scheduler" when absent)
  std::string phase;           // status.phase
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  int priority = 0;  // spec.priority (0 when unset)
  // spec.activeDeadlineSeconds: the kubelet stops the pod this long after it started (0 = unset).
  // A time limit, so the gang queue may plan with it (k8s/runtime_estimate.h).
  int64_t active_deadline_seconds = 0;
  // The upstream gang API (KEP-4671), which names the pod's group in its spec:
  // spec.schedulingGroup.podGroupName (1.36+) or spec.workloadRef (1.35).
  std::string scheduling_group;
  struct WorkloadRef {
    std::string name, pod_group, replica_key;
  } workload_ref;
  // The metadata.ownerReferences entry with controller: true (empty when none).
  struct OwnerRef {
    std::string api_version, kind, name;
  } controller;
  // spec.schedulingGates is not empty: the pod may not be scheduled yet (a queue such as Kueue
  // admits it later by removing its gates).
  bool gated = false;
  int64_t gpus = 0;                // effective request of `resource`
  bool mentions_resource = false;  // some container names it (kube-scheduler's IsInterested)

  std::string Key() const { return namespace_ + "/" + name; }
  bool Terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

// Effective request, as Kubernetes computes it:
//   max( sum(app containers) + sum(restartable init containers),
//        max over init containers i of (request_i + restartable init containers before i) )
// plus spec.overhead. A container's request defaults to its limit. Quantities must be whole.
absl::StatusOr<PodInfo> ParsePod(const Json& pod, absl::string_view resource);

// A key "name" from a string map object such as metadata.labels; wrong types are errors.
absl::StatusOr<std::map<std::string, std::string>> ParseStringMap(const Json& obj,
                                                                  absl::string_view key,
                                                                  absl::string_view what);

}  // namespace topogang
