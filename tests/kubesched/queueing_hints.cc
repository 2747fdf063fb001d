#include "tests/kubesched/queueing_hints.h"

#include <algorithm>

#include "tests/kubesched/node_filters.h"

namespace topogang::kubesched {
namespace {

ClusterEvent Make(EventResource r, uint32_t action, const char* label) {
  ClusterEvent e;
  e.resource = r;
  e.action = action;
  e.label = label;
  return e;
}

bool SameTaints(const std::vector<Taint>& a, const std::vector<Taint>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](auto& x, auto& y) {
           return x.key == y.key && x.value == y.value && x.effect == y.effect;
         });
}

bool SameTolerations(const std::vector<Toleration>& a, const std::vector<Toleration>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](auto& x, auto& y) {
           return x.key == y.key && x.op == y.op && x.value == y.value && x.effect == y.effect;
         });
}

bool SameResources(const Resources& a, const Resources& b) {
  return a.milli_cpu == b.milli_cpu && a.memory == b.memory &&
         a.ephemeral_storage == b.ephemeral_storage && a.allowed_pods == b.allowed_pods &&
         a.scalar == b.scalar;
}

// Whether `plugin` registered an event matching `e` (framework.MatchClusterEvents).
bool Registered(const std::string& plugin, const ClusterEvent& e, bool hints) {
  if (plugin == kExtenderPlugin) return true;  // wildcard registration
  if (e.IsWildCard()) return true;
  const bool node = e.resource == EventResource::kNode;
  const bool pod = e.resource == EventResource::kPod;
  uint32_t node_actions = 0, pod_actions = 0;
  if (plugin == kNodeUnschedulable) {
    node_actions = kAdd | kUpdateNodeTaint;
    if (hints) pod_actions = kUpdatePodToleration;
  } else if (plugin == kTaintToleration) {
    node_actions = kAdd | kUpdateNodeTaint;
    if (hints) pod_actions = kUpdatePodToleration;
  } else if (plugin == kNodeAffinity) {
    node_actions = kAdd | kUpdateNodeLabel | (hints ? 0u : uint32_t{kUpdateNodeTaint});
  } else if (plugin == kNodeResourcesFit) {
    node_actions = kAdd | kUpdateNodeAllocatable |
                   (hints ? 0u : uint32_t{kUpdateNodeTaint | kUpdateNodeLabel});
    pod_actions = kDelete;
  } else {
    return true;  // a plugin we do not model: assume it cares
  }
  return (node && (node_actions & e.action)) || (pod && (pod_actions & e.action));
}

NodeState EmptyNodeState(const NodePtr& node) {
  NodeState s;
  s.node = node;
  return s;
}

// The plugin's QueueingHintFn (hints on). Returns true for Queue.
bool Hint(const std::string& plugin, const Pod& pod, const ClusterEvent& e) {
  if (plugin == kNodeUnschedulable) {
    if (e.resource == EventResource::kPod) return e.new_pod && e.new_pod->uid == pod.uid;
    if (!e.new_node) return false;
    // isSchedulableAfterNodeChange: the node turned schedulable (or was added schedulable).
    const bool was = e.old_node && !e.old_node->unschedulable;
    return !was && !e.new_node->unschedulable;
  }
  if (plugin == kTaintToleration) {
    if (e.resource == EventResource::kPod) return e.new_pod && e.new_pod->uid == pod.uid;
    if (!e.new_node) return false;
    const bool was_untolerated =
        !e.old_node || FindUntoleratedTaint(e.old_node->taints, pod.tolerations) != nullptr;
    const bool is_untolerated = FindUntoleratedTaint(e.new_node->taints, pod.tolerations);
    return was_untolerated && !is_untolerated;
  }
  if (plugin == kNodeAffinity) {
    if (!e.new_node || !MatchesRequiredNodeAffinity(pod, *e.new_node)) return false;
    return !e.old_node || !MatchesRequiredNodeAffinity(pod, *e.old_node);
  }
  if (plugin == kNodeResourcesFit) {
    if (e.resource == EventResource::kPod) {
      // isSchedulableAfterPodEvent: a deleted pod frees something only if it was assigned or
      // nominated.
      const PodPtr& gone = e.old_pod;
      return !e.new_pod && gone && (!gone->node_name.empty() || !gone->nominated_node_name.empty());
    }
    if (!e.new_node || !Fits(pod, EmptyNodeState(e.new_node)).empty()) return false;
    if (!e.old_node) return true;
    // haveAnyRequestedResourcesIncreased.
    const Resources& before = e.old_node->allocatable;
    const Resources& after = e.new_node->allocatable;
    if (after.allowed_pods > before.allowed_pods) return true;
    const Resources& req = pod.requests;
    if ((req.milli_cpu > 0 && after.milli_cpu > before.milli_cpu) ||
        (req.memory > 0 && after.memory > before.memory) ||
        (req.ephemeral_storage > 0 && after.ephemeral_storage > before.ephemeral_storage)) {
      return true;
    }
    for (const auto& [name, q] : req.scalar) {
      if (q != 0 && after.Scalar(name) > before.Scalar(name)) return true;
    }
    return false;
  }
  return true;  // the extender's hint, and plugins we do not model
}

}  // namespace

ClusterEvent NodeAddEvent(NodePtr node) {
  ClusterEvent e = Make(EventResource::kNode, kAdd, "NodeAdd");
  e.new_node = std::move(node);
  return e;
}

ClusterEvent NodeDeleteEvent(NodePtr node) {
  ClusterEvent e = Make(EventResource::kNode, kDelete, "NodeDelete");
  e.old_node = std::move(node);
  return e;
}

std::vector<ClusterEvent> NodeUpdateEvents(NodePtr old_node, NodePtr new_node) {
  std::vector<ClusterEvent> out;
  auto add = [&](uint32_t action, const char* label) {
    ClusterEvent e = Make(EventResource::kNode, action, label);
    e.old_node = old_node;
    e.new_node = new_node;
    out.push_back(std::move(e));
  };
  if (old_node->unschedulable != new_node->unschedulable) {
    add(kUpdateNodeTaint, "NodeSpecUnschedulableChange");
  }
  if (!SameResources(old_node->allocatable, new_node->allocatable)) {
    add(kUpdateNodeAllocatable, "NodeAllocatableChange");
  }
  if (old_node->labels != new_node->labels) add(kUpdateNodeLabel, "NodeLabelChange");
  if (!SameTaints(old_node->taints, new_node->taints)) add(kUpdateNodeTaint, "NodeTaintChange");
  if (old_node->conditions != new_node->conditions) {
    add(kUpdateNodeCondition, "NodeConditionChange");
  }
  if (old_node->annotations != new_node->annotations) {
    add(kUpdateNodeAnnotation, "NodeAnnotationChange");
  }
  return out;
}

ClusterEvent AssignedPodAddEvent(PodPtr pod) {
  ClusterEvent e = Make(EventResource::kPod, kAdd, "AssignedPodAdd");
  e.new_pod = std::move(pod);
  return e;
}

ClusterEvent AssignedPodDeleteEvent(PodPtr pod) {
  ClusterEvent e = Make(EventResource::kPod, kDelete, "AssignedPodDelete");
  e.old_pod = std::move(pod);
  return e;
}

std::vector<ClusterEvent> PodUpdateEvents(PodPtr old_pod, PodPtr new_pod, bool assigned) {
  std::vector<ClusterEvent> out;
  auto add = [&](uint32_t action, const std::string& label) {
    ClusterEvent e;
    e.resource = EventResource::kPod;
    e.action = action;
    e.label = (assigned ? "AssignedPod" : "UnscheduledPod") + label;
    e.old_pod = old_pod;
    e.new_pod = new_pod;
    out.push_back(std::move(e));
  };
  if (old_pod->labels != new_pod->labels) add(kUpdatePodLabel, "UpdatePodLabel");
  const Resources& a = old_pod->requests;
  const Resources& b = new_pod->requests;
  bool scaled_down =
      b.milli_cpu < a.milli_cpu || b.memory < a.memory || b.ephemeral_storage < a.ephemeral_storage;
  for (const auto& [name, q] : a.scalar) scaled_down |= b.Scalar(name) < q;
  if (scaled_down) add(kUpdatePodScaleDown, "UpdatePodScaleDown");
  if (!SameTolerations(old_pod->tolerations, new_pod->tolerations)) {
    add(kUpdatePodToleration, "UpdatePodToleration");
  }
  if (out.empty()) add(kUpdatePodOther, "Update");
  return out;
}

ClusterEvent UnschedulableTimeoutEvent() {
  return Make(EventResource::kWildCard, kAllActions, "UnschedulableTimeout");
}

QueueingStrategy IsPodWorthRequeuing(const Pod& pod, const std::set<std::string>& rejectors,
                                     const ClusterEvent& event, bool queueing_hints) {
  if (rejectors.empty() || event.IsWildCard()) return QueueingStrategy::kAfterBackoff;
  for (const std::string& plugin : rejectors) {
    if (!Registered(plugin, event, queueing_hints)) continue;
    if (!queueing_hints || Hint(plugin, pod, event)) return QueueingStrategy::kAfterBackoff;
  }
  return QueueingStrategy::kSkip;
}

}  // namespace topogang::kubesched
