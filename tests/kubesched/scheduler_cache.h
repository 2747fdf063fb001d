// kube-scheduler's cache (pkg/scheduler/backend/cache/cache.go, node_tree.go): the nodes and,
// per node, the resources of the pods assigned to it, counting pods that a scheduling cycle has
// *assumed* there while their binding is still running.
//
// - AssumePod after a successful scheduling cycle, FinishBinding when the bind returns, and
//   ForgetPod when the bind failed; the informer's AddPod confirms an assumed pod (and moves it
//   if it was bound elsewhere). Assumed pods never expire (durationToExpireAssumedPod is 0 in
//   current releases), so a pod whose bind is held counts on its node until the bind returns.
// - Snapshot() lists nodes in node-tree order: zones (region/zone labels) taken round-robin, in
//   the order they first appeared, nodes within a zone in the order they were added. The
//   scheduling cycle searches this list from a rotating start index.
//
// Thread-safety: thread-safe. Snapshots are immutable and stay valid after later changes.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "tests/kubesched/api_objects.h"
#include "tests/kubesched/node_filters.h"

namespace topogang::kubesched {

using NodeStatePtr = std::shared_ptr<const NodeState>;
// Every node in node-tree order, as one scheduling cycle sees them.
using NodeSnapshot = std::shared_ptr<const std::vector<NodeStatePtr>>;

class SchedulerCache {
 public:
  void AddNode(NodePtr node);
  void UpdateNode(NodePtr node);
  void RemoveNode(const std::string& name);

  // An assigned pod seen by the informer (confirms it when it was assumed).
  void AddPod(PodPtr pod);
  void UpdatePod(PodPtr pod);
  void RemovePod(const Pod& pod);

  // Counts `pod` on `node_name` until it is confirmed or forgotten. Fails when the pod is
  // already in the cache (assumed or assigned).
  absl::Status AssumePod(PodPtr pod, const std::string& node_name);
  void FinishBinding(const std::string& uid);
  // Drops an assumed pod (bind failed or the pod was deleted). Fails for a confirmed pod.
  absl::Status ForgetPod(const std::string& uid);
  bool IsAssumed(const std::string& uid) const;
  // The node the pod counts on ("" when the cache does not hold it).
  std::string NodeOf(const std::string& uid) const;

  // Cheap when little changed: the list is shared copy-on-write between snapshots and only
  // the nodes that changed since the last one are rebuilt.
  NodeSnapshot Snapshot();
  NodeStatePtr GetNode(const std::string& name);
  size_t NumNodes() const;

 private:
  struct NodeEntry {
    NodePtr node;  // null while only pods name it (kube-scheduler's "imaginary node")
    Resources requested;
    int64_t nonzero_milli_cpu = 0, nonzero_memory = 0;
    int num_pods = 0;
    NodeStatePtr state;  // rebuilt lazily after a change
    int64_t pos = -1;    // index in the snapshot list, -1 when not listed
  };
  struct PodEntry {
    PodPtr pod;
    std::string node;
    bool assumed = false;
    bool binding_finished = false;
  };

  void AccountLocked(const Pod& pod, const std::string& node, int sign);
  void TouchLocked(NodeEntry& e);
  void AddToTreeLocked(const Node& node);
  void RemoveFromTreeLocked(const std::string& name, const std::string& zone);
  NodeStatePtr StateLocked(NodeEntry& e);

  mutable std::mutex mu_;
  std::unordered_map<std::string, NodeEntry> nodes_;
  std::unordered_map<std::string, PodEntry> pods_;  // by UID
  size_t num_real_nodes_ = 0;
  // node tree
  std::vector<std::string> zones_;
  std::map<std::string, std::vector<std::string>> tree_;
  bool order_dirty_ = true;
  std::shared_ptr<std::vector<NodeStatePtr>> snapshot_;
  std::vector<NodeEntry*> changed_;  // listed nodes changed since the last snapshot
};

}  // namespace topogang::kubesched
