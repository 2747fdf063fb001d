// Small helpers shared by the GangLedger's implementation files (not part of its interface).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "daemon/gang_ledger.h"
#include "k8s/runtime_estimate.h"

namespace topogang {

// Held binds to answer once the ledger lock is released: callbacks never run under mu_.
using FailList = std::vector<std::pair<BindCallback, std::string>>;

inline void RunFails(FailList& fails) {
  for (auto& [cb, why] : fails) {
    if (cb) cb(why);
  }
  fails.clear();
}

// Nodes of the model that kube-scheduler did not offer for a pod: its own filters rejected them
// (selectors, affinity, taints it does not tolerate, other resources). O(nodes + offered), paid
// once per gang reservation or growth, not per member.
std::vector<int> NodesNotOffered(const Cluster& c, const std::vector<std::string>& offered);

// Of `not_offered`, the nodes that had room for a member of `gpus_per_member` GPUs as
// kube-scheduler counts it (free healthy GPUs, plus GPUs the queue holds for `queued` gangs: no
// pod requests those), so its own filters refused them for something else: a selector,
// affinity, a taint, a cordon. A node not offered without that room may only be full now
// (NodeResourcesFit) and is not among them: a gang may still wait for it. Holds are looked up
// by gang, not by scanning every reservation: this runs at each filter of a waiting gang.
std::vector<int> NodesRefusedWithRoom(const GangScheduler& s, const std::vector<int>& not_offered,
                                      int gpus_per_member, const std::vector<std::string>& queued);

// A bound pod's run-time estimate and limit (k8s/runtime_estimate.h) on `spec`. A malformed
// estimate is refused when the pod is filtered; a pod already running is adopted without one
// rather than lost.
inline void SetRuntimeEstimate(const PodInfo& pod, GangSpec* spec) {
  auto d = ParseRuntimeEstimate(pod.labels, pod.annotations, pod.active_deadline_seconds);
  spec->runtime_estimate = d.ok() ? *d : RuntimeLimit(pod.active_deadline_seconds);
  spec->runtime_limit = RuntimeLimit(pod.active_deadline_seconds);
}

}  // namespace topogang
