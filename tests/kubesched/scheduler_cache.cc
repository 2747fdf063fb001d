#include "tests/kubesched/scheduler_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace topogang::kubesched {

void SchedulerCache::AccountLocked(const Pod& pod, const std::string& node, int sign) {
  NodeEntry& e = nodes_[node];
  if (sign > 0) {
    e.requested.Add(pod.requests);
  } else {
    e.requested.Subtract(pod.requests);
  }
  e.nonzero_milli_cpu += sign * pod.nonzero_milli_cpu;
  e.nonzero_memory += sign * pod.nonzero_memory;
  e.num_pods += sign;
  TouchLocked(e);
  if (!e.node && e.num_pods == 0) nodes_.erase(node);
}

void SchedulerCache::TouchLocked(NodeEntry& e) {
  if (e.state && e.pos >= 0 && !order_dirty_) changed_.push_back(&e);
  e.state.reset();
}

void SchedulerCache::AddToTreeLocked(const Node& node) {
  auto [it, inserted] = tree_.try_emplace(node.zone_key);
  if (inserted) zones_.push_back(node.zone_key);
  if (std::find(it->second.begin(), it->second.end(), node.name) == it->second.end()) {
    it->second.push_back(node.name);
  }
  order_dirty_ = true;
}

void SchedulerCache::RemoveFromTreeLocked(const std::string& name, const std::string& zone) {
  auto it = tree_.find(zone);
  if (it == tree_.end()) return;
  auto& names = it->second;
  names.erase(std::remove(names.begin(), names.end(), name), names.end());
  if (names.empty()) {
    tree_.erase(it);
    zones_.erase(std::remove(zones_.begin(), zones_.end(), zone), zones_.end());
  }
  order_dirty_ = true;
}

void SchedulerCache::AddNode(NodePtr node) {
  std::lock_guard<std::mutex> lock(mu_);
  NodeEntry& e = nodes_[node->name];
  if (e.node) {
    if (e.node->zone_key != node->zone_key) {
      RemoveFromTreeLocked(node->name, e.node->zone_key);
      AddToTreeLocked(*node);
    }
  } else {
    ++num_real_nodes_;
    AddToTreeLocked(*node);
  }
  e.node = std::move(node);
  TouchLocked(e);
}

void SchedulerCache::UpdateNode(NodePtr node) { AddNode(std::move(node)); }

void SchedulerCache::RemoveNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end() || !it->second.node) return;
  RemoveFromTreeLocked(name, it->second.node->zone_key);
  --num_real_nodes_;
  it->second.node.reset();
  it->second.state.reset();
  it->second.pos = -1;
  if (it->second.num_pods == 0) nodes_.erase(it);
}

void SchedulerCache::AddPod(PodPtr pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(pod->uid);
  if (it != pods_.end()) {
    PodEntry& p = it->second;
    AccountLocked(*p.pod, p.node, -1);
    p.pod = pod;
    p.node = pod->node_name;
    p.assumed = false;  // confirmed, on the node the API server says
    AccountLocked(*pod, p.node, +1);
    return;
  }
  AccountLocked(*pod, pod->node_name, +1);
  pods_[pod->uid] = PodEntry{pod, pod->node_name, false, true};
}

void SchedulerCache::UpdatePod(PodPtr pod) { AddPod(std::move(pod)); }

void SchedulerCache::RemovePod(const Pod& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(pod.uid);
  if (it == pods_.end()) return;
  AccountLocked(*it->second.pod, it->second.node, -1);
  pods_.erase(it);
}

absl::Status SchedulerCache::AssumePod(PodPtr pod, const std::string& node_name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pods_.count(pod->uid)) {
    return absl::AlreadyExistsError(
        absl::StrCat("pod ", pod->key(), "(", pod->uid, ") is in the cache, so can't be assumed"));
  }
  AccountLocked(*pod, node_name, +1);
  const std::string uid = pod->uid;
  pods_[uid] = PodEntry{std::move(pod), node_name, true, false};
  return absl::OkStatus();
}

void SchedulerCache::FinishBinding(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = pods_.find(uid); it != pods_.end()) it->second.binding_finished = true;
}

absl::Status SchedulerCache::ForgetPod(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || !it->second.assumed) {
    return absl::FailedPreconditionError(absl::StrCat("pod ", uid, " is not assumed"));
  }
  AccountLocked(*it->second.pod, it->second.node, -1);
  pods_.erase(it);
  return absl::OkStatus();
}

bool SchedulerCache::IsAssumed(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  return it != pods_.end() && it->second.assumed;
}

std::string SchedulerCache::NodeOf(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  return it == pods_.end() ? "" : it->second.node;
}

NodeStatePtr SchedulerCache::StateLocked(NodeEntry& e) {
  if (!e.state) {
    auto s = std::make_shared<NodeState>();
    s->node = e.node;
    s->requested = e.requested;
    s->nonzero_milli_cpu = e.nonzero_milli_cpu;
    s->nonzero_memory = e.nonzero_memory;
    s->num_pods = e.num_pods;
    e.state = std::move(s);
  }
  return e.state;
}

NodeSnapshot SchedulerCache::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  if (order_dirty_) {
    // nodeTree.list(): one node from each zone per round.
    for (auto& [name, e] : nodes_) e.pos = -1;
    auto list = std::make_shared<std::vector<NodeStatePtr>>();
    list->reserve(num_real_nodes_);
    for (size_t round = 0;; ++round) {
      bool any = false;
      for (const std::string& zone : zones_) {
        const auto& names = tree_[zone];
        if (round >= names.size()) continue;
        NodeEntry& e = nodes_[names[round]];
        e.pos = static_cast<int64_t>(list->size());
        list->push_back(StateLocked(e));
        any = true;
      }
      if (!any) break;
    }
    snapshot_ = std::move(list);
    changed_.clear();
    order_dirty_ = false;
  } else if (!changed_.empty()) {
    if (snapshot_.use_count() > 1) {
      snapshot_ = std::make_shared<std::vector<NodeStatePtr>>(*snapshot_);  // still in use
    }
    for (NodeEntry* e : changed_) {
      if (e->pos >= 0) (*snapshot_)[e->pos] = StateLocked(*e);
    }
    changed_.clear();
  }
  return snapshot_;
}

NodeStatePtr SchedulerCache::GetNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end() || !it->second.node) return nullptr;
  return StateLocked(it->second);
}

size_t SchedulerCache::NumNodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_real_nodes_;
}

}  // namespace topogang::kubesched
