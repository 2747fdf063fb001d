// The default profile's Score plugins that can tell nodes apart for pods without inter-pod
// (anti-)affinity or spread constraints, as pure functions (thread-compatible).
//
// kube-scheduler adds these to the extender's scores (weight x score x 10) before it picks a
// host (schedule_one.go prioritizeNodes), so an extender that relies on prioritize alone can be
// outvoted; modelling them keeps that visible. Weights are the v1 defaults
// (pkg/scheduler/apis/config/v1/default_plugins.go):
//   TaintToleration 3   PreferNoSchedule taints not tolerated, normalized in reverse
//   NodeAffinity    2   sum of matching preferred terms' weights, normalized
//   NodeResourcesFit 1  LeastAllocated on cpu and memory (noderesources/least_allocated.go)
//   NodeResourcesBalancedAllocation 1  (noderesources/balanced_allocation.go)
// PodTopologySpread, InterPodAffinity and ImageLocality give every node the same score for the
// pods this emulator handles (no constraints, no images in node status), so they are left out.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/kubesched/node_filters.h"

namespace topogang::kubesched {

inline constexpr int64_t kMaxNodeScore = 100;  // fwk.MaxNodeScore

// Weighted sum of the in-tree scores for each node, in the order given.
std::vector<int64_t> InTreeScores(const Pod& pod, const std::vector<const NodeState*>& nodes);

// The parts, unweighted (0..100 each), exposed for tests.
int64_t LeastAllocatedScore(const Pod& pod, const NodeState& node);
// -1 when the plugin skips the pod (no cpu or memory request: a best-effort pod).
int64_t BalancedAllocationScore(const Pod& pod, const NodeState& node);
// helper.DefaultNormalizeScore.
void NormalizeScores(std::vector<int64_t>* scores, bool reverse);

}  // namespace topogang::kubesched
