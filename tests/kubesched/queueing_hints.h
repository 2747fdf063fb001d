// Cluster events and the queueing hints that decide whether an event may make a pod that was
// rejected by some plugins schedulable again (pure, thread-compatible).
//
// Sources:
//   pkg/scheduler/framework/events.go      NodeSchedulingPropertiesChange,
//                                          PodSchedulingPropertiesChange, event labels
//   pkg/scheduler/backend/queue/scheduling_queue.go  isPodWorthRequeuing
//   each plugin's EventsToRegister and isSchedulableAfter* hint functions
//   pkg/scheduler/framework/runtime/framework.go     extenders register the wildcard event
//     with a hint that always says Queue (kubernetes#122019, PR #122022)
// With queueing hints off (SchedulerQueueingHints false, the default in v1.29-v1.31) every
// registered event counts as Queue.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tests/kubesched/api_objects.h"

namespace topogang::kubesched {

// fwk.ActionType bits.
enum ActionType : uint32_t {
  kAdd = 1u << 0,
  kDelete = 1u << 1,
  kUpdateNodeAllocatable = 1u << 2,
  kUpdateNodeLabel = 1u << 3,
  kUpdateNodeTaint = 1u << 4,
  kUpdateNodeCondition = 1u << 5,
  kUpdateNodeAnnotation = 1u << 6,
  kUpdatePodLabel = 1u << 7,
  kUpdatePodScaleDown = 1u << 8,
  kUpdatePodToleration = 1u << 9,
  kUpdatePodOther = 1u << 10,
  kAllActions = ~0u,
};

enum class EventResource { kNode, kPod, kWildCard };

// A cluster event together with the objects involved (kube-scheduler keeps them side by side in
// its in-flight event list).
struct ClusterEvent {
  EventResource resource = EventResource::kWildCard;
  uint32_t action = kAllActions;
  std::string label;  // "NodeAdd", "AssignedPodDelete", "UnschedulableTimeout", ...
  NodePtr old_node, new_node;
  PodPtr old_pod, new_pod;

  bool IsWildCard() const { return resource == EventResource::kWildCard; }
};

ClusterEvent NodeAddEvent(NodePtr node);
ClusterEvent NodeDeleteEvent(NodePtr node);
// One event per scheduling-relevant change (spec.unschedulable, allocatable, labels, taints,
// conditions, annotations); none when nothing relevant changed.
std::vector<ClusterEvent> NodeUpdateEvents(NodePtr old_node, NodePtr new_node);
ClusterEvent AssignedPodAddEvent(PodPtr pod);
ClusterEvent AssignedPodDeleteEvent(PodPtr pod);
// Label, toleration and scale-down changes, else one "other update" event.
std::vector<ClusterEvent> PodUpdateEvents(PodPtr old_pod, PodPtr new_pod, bool assigned);
ClusterEvent UnschedulableTimeoutEvent();

// queueSkip / queueAfterBackoff / queueImmediately (scheduling_queue.go queueingStrategy).
enum class QueueingStrategy { kSkip, kAfterBackoff, kImmediately };

// isPodWorthRequeuing for a pod rejected by `rejectors` (its UnschedulablePlugins): no
// rejectors or a wildcard event -> after backoff; otherwise after backoff when some rejector
// registered for the event and its hint (or, hints off, the registration alone) says Queue.
QueueingStrategy IsPodWorthRequeuing(const Pod& pod, const std::set<std::string>& rejectors,
                                     const ClusterEvent& event, bool queueing_hints);

}  // namespace topogang::kubesched
