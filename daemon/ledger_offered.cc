// Which nodes a pod was not offered, and which of those it may never use (daemon/ledger_util.h).
// kube-scheduler sends the extender only the nodes that passed its own filters; the difference
// is what the planner must avoid for the gang, and the part of it refused with room to spare is
// what a hold for the gang must avoid too. A node freed moments ago may not be free yet in
// kube-scheduler's cache; once it has been offered to a pod as large, it is, and once a node that
// only a deletion made fit for a pod is offered to it, every deletion before that one is in the
// cache too.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"
#include "scheduler/queue_policy.h"

namespace topogang {

std::vector<int> NodesNotOffered(const Cluster& c, const std::vector<std::string>& offered) {
  absl::flat_hash_set<absl::string_view> ok(offered.begin(), offered.end());
  std::vector<int> out;
  for (int n = 0; n < c.num_nodes(); ++n) {
    if (!ok.contains(c.node(n).name)) out.push_back(n);
  }
  return out;
}

std::vector<int> NodesRefusedWithRoom(const GangScheduler& s, const std::vector<int>& not_offered,
                                      int gpus_per_member, const std::vector<std::string>& queued) {
  if (not_offered.empty()) return {};
  const Cluster& c = s.cluster();
  absl::flat_hash_map<int, int> held;  // node -> GPUs held there
  for (const std::string& gang : queued) {
    const GangRecord* h = s.Find(GangQueue::HoldName(gang));
    if (h == nullptr || h->state != GangState::kHeld) continue;
    for (const MemberPlacement& m : h->placement.members) {
      if (m.node >= 0) held[m.node] += static_cast<int>(m.gpus.size());
    }
  }
  std::vector<int> out;
  for (int n : not_offered) {
    auto it = held.find(n);
    if (c.NodeFreeHealthy(n) + (it == held.end() ? 0 : it->second) >= gpus_per_member) {
      out.push_back(n);
    }
  }
  return out;
}

std::vector<int> GangLedger::NodesItMayNeverUseLocked(const GangScheduler& s, const std::string& id,
                                                      const std::vector<int>& not_offered,
                                                      const std::vector<int>& exempt,
                                                      int gpus_per_member) const {
  std::vector<std::string> queued = {id};
  for (const auto& [gang, pods] : waiting_pods_) queued.push_back(gang);
  std::vector<int> fresh;  // not offered, and not merely unseen free by kube-scheduler
  for (int n : not_offered) {
    if (!absl::c_binary_search(exempt, n)) fresh.push_back(n);
  }
  std::vector<int> known = NodesRefusedWithRoom(s, fresh, gpus_per_member, queued);
  // A node refused with room at an earlier filter and still not offered stays one it may never
  // use, though full now (another gang reserved it meanwhile): forgotten, a queue pass started the
  // gang there once it freed, its woken pods were not offered it, and gangs took turns at that
  // for good (the churn test: three large gangs, 20 s).
  if (auto it = hold_excluded_.find(id); it != hold_excluded_.end()) {
    absl::flat_hash_set<int> still(not_offered.begin(), not_offered.end());
    for (int n : it->second) {
      if (still.contains(n)) known.push_back(n);
    }
  }
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  return known;
}

std::vector<int> GangLedger::FreedUnseenLocked(const GangScheduler& s,
                                               const std::vector<int>& not_offered,
                                               int gpus_per_member, absl::Time now) const {
  std::vector<int> out;
  for (int n : not_offered) {
    auto f = freed_at_.find(s.cluster().node(n).name);
    if (f != freed_at_.end() && now - f->second.at < kRecentlyFreed && f->second.at > cache_seen_ &&
        f->second.offered_gpus < gpus_per_member) {
      out.push_back(n);
    }
  }
  return out;
}

GangQueue::NodeExclusion GangLedger::HoldExclusionLocked() const {
  return [this](const GangSpec& g) { return ExcludedFor(g, hold_excluded_); };
}

GangQueue::NodeExclusion GangLedger::ExclusionLocked(const std::string& current) const {
  auto behind = std::make_shared<bool>(false);  // the queue plans its gangs in order
  return [this, current, behind](const GangSpec& g) {
    if (g.name == current) {
      *behind = true;
      return ExcludedFor(g);
    }
    std::vector<int> out = ExcludedFor(g, hold_excluded_);
    if (*behind) out.insert(out.end(), asker_exempt_.begin(), asker_exempt_.end());
    return out;
  };
}

void GangLedger::NoteRefusedWithRoomLocked(const std::string& id, const std::vector<int>& refused,
                                           absl::Time now) {
  absl::flat_hash_map<int, absl::Time> kept;
  auto since = refused_since_.find(id);
  for (int n : refused) {
    absl::Time first = now;
    if (since != refused_since_.end()) {
      if (auto it = since->second.find(n); it != since->second.end()) first = it->second;
    }
    kept[n] = first;
  }
  if (kept.empty()) {
    refused_since_.erase(id);
  } else {
    refused_since_[id] = std::move(kept);
  }
}

void GangLedger::NoteOccupiedLocked(const std::string& node, absl::Time now) {
  if (refused_since_.empty()) return;
  const int n = state_.With([&](GangScheduler& s) { return s.cluster().FindNode(node); });
  if (n < 0) return;
  for (auto it = refused_since_.begin(); it != refused_since_.end();) {
    auto held = hold_excluded_.find(it->first);
    if (held == hold_excluded_.end()) {  // nothing waits for that gang any more
      it = refused_since_.erase(it);
      continue;
    }
    if (auto r = it->second.find(n); r != it->second.end() && now - r->second < kRecentlyFreed) {
      // The first entry: the refusal (sorted first); one the gang avoids by name follows it.
      std::vector<int>& nodes = held->second;
      if (auto pos = absl::c_find(nodes, n); pos != nodes.end()) nodes.erase(pos);
      it->second.erase(r);
    }
    ++it;
  }
}

void GangLedger::NoteOfferedLocked(const std::vector<std::string>& offered, int64_t gpus,
                                   absl::Time now) {
  if (freed_at_.empty()) return;
  bool stale = false;
  for (const std::string& n : offered) {
    auto f = freed_at_.find(n);
    if (f == freed_at_.end()) continue;
    if (now - f->second.at >= kRecentlyFreed) {
      stale = true;
    } else {
      f->second.offered_gpus = std::max(f->second.offered_gpus, gpus);
      // It could not hold this pod before its deletion: kube-scheduler's cache has that deletion.
      if (f->second.free_before < gpus) cache_seen_ = std::max(cache_seen_, f->second.at);
    }
  }
  if (stale) {
    absl::erase_if(freed_at_, [&](const auto& f) { return now - f.second.at >= kRecentlyFreed; });
  }
}

}  // namespace topogang
