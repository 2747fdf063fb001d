#include "sim/gang_policy.h"

#include <algorithm>
#include <tuple>

namespace topogang::sim {

void TakeMembersOnNode(const Cluster& c, int node, int gpus, int count,
                       std::vector<MemberPlacement>* out) {
  const NodeInfo& info = c.node(node);
  size_t g = info.gpu_begin;
  const size_t end = info.gpu_begin + info.gpus;
  for (int m = 0; m < count; ++m) {
    MemberPlacement mp{node, {}};
    for (int i = 0; i < gpus; ++i) {
      g = BitMask::FindNextAnd(c.free_mask(), c.healthy_mask(), g, end);
      mp.gpus.push_back(static_cast<int>(g++));
    }
    out->push_back(std::move(mp));
  }
}

std::vector<MemberPlacement> Materialize(const Cluster& c,
                                         const std::vector<std::pair<int, int>>& node_members,
                                         int gpus) {
  // Merge repeated nodes so each node's GPUs are picked once.
  std::vector<std::pair<int, int>> merged;
  for (const auto& nk : node_members) {
    const int node = nk.first, k = nk.second;  // named copies: lambdas may capture them
    auto it = std::find_if(merged.begin(), merged.end(), [&](auto& p) { return p.first == node; });
    if (it == merged.end()) {
      merged.emplace_back(node, k);
    } else {
      it->second += k;
    }
  }
  std::vector<MemberPlacement> out;
  for (auto [node, k] : merged) TakeMembersOnNode(c, node, gpus, k, &out);
  return out;
}

void ClusterGangPolicy::Take(int, const std::vector<MemberPlacement>& members) {
  std::vector<int> gpus;
  for (const auto& m : members) gpus.insert(gpus.end(), m.gpus.begin(), m.gpus.end());
  (void)cluster_.Allocate(gpus);
}

void ClusterGangPolicy::Give(int, const std::vector<MemberPlacement>& members) {
  std::vector<int> gpus;
  for (const auto& m : members) gpus.insert(gpus.end(), m.gpus.begin(), m.gpus.end());
  (void)cluster_.Release(gpus);
}

int GangPolicy::RequiredLevel(int j) const {
  const std::string& t = job(j).gang.required_tier;
  if (t.empty()) return 0;
  return std::max(0, cluster().LevelByName(t));
}

void GangPolicy::Enqueue(int j, double) {
  queue_.insert(std::lower_bound(queue_.begin(), queue_.end(), j), j);
  fresh_.insert(j);
}

void GangPolicy::Finish(int j) {
  auto it = running_.find(j);
  if (it == running_.end()) return;
  Give(j, it->second.members);
  by_end_.erase({it->second.end, j});
  running_.erase(it);
  freed_ = true;
}

HealthResult GangPolicy::SetNodeDown(int node, bool down, bool fail, double now) {
  HealthResult r;
  SetCordoned(node, down);
  freed_ = true;  // capacity changed either way: re-evaluate the whole queue
  shadow_head_ = -1;
  if (!down || !fail) return r;
  std::vector<int> hit;
  for (const auto& [j, run] : running_) {
    if (std::any_of(run.members.begin(), run.members.end(),
                    [&](const MemberPlacement& m) { return m.node == node; })) {
      hit.push_back(j);
    }
  }
  for (int j : hit) {
    Running& run = running_[j];
    std::vector<MemberPlacement> repaired = run.members;
    if (Repair(j, node, now, &repaired)) {
      run.members = repaired;
      r.moved.emplace_back(j, std::move(repaired));
      continue;
    }
    Give(j, run.members);
    by_end_.erase({run.end, j});
    running_.erase(j);
    r.killed.push_back(j);
  }
  return r;
}

void GangPolicy::ComputeShadow(int head, double now) {
  const Cluster& c = cluster();
  const SimJob& h = job(head);
  const int g = h.gang.gpus_per_member;
  const long need = h.gang.members;
  const int level = RequiredLevel(head);
  const int base = c.LevelBegin(level);
  std::vector<long> cap(c.LevelEnd(level) - base);
  long total = 0;
  for (size_t i = 0; i < cap.size(); ++i) {
    cap[i] = c.MemberCapacity(base + static_cast<int>(i), kAnySku, g);
    total += cap[i];
  }
  shadow_head_ = head;
  shadow_spare_gpus_ = 0;
  if (*std::max_element(cap.begin(), cap.end()) >= need) {
    // Enough room by count, yet the placement failed: hold everything until it fits.
    shadow_time_ = now;
    return;
  }
  std::vector<int> node_free(c.num_nodes());
  for (int n = 0; n < c.num_nodes(); ++n) node_free[n] = c.NodeFreeHealthy(n);
  for (const auto& [end, j] : by_end_) {
    for (const MemberPlacement& m : running_[j].members) {
      if (c.NodeCordoned(m.node)) continue;
      int& f = node_free[m.node];
      int before = f / g;
      f = std::min(f + static_cast<int>(m.gpus.size()), c.node(m.node).gpus);
      int gained = f / g - before;
      if (gained == 0) continue;
      long& dc = cap[c.AncestorAt(c.NodeDomain(m.node), level) - base];
      dc += gained;
      total += gained;
      if (dc >= need) {
        shadow_time_ = end;
        shadow_spare_gpus_ = (total - need);  // in head members
        return;
      }
    }
  }
  shadow_time_ = kNever;
}

GangPolicy::TryResult GangPolicy::TryStart(int j, double now, std::vector<Started>* out,
                                           long* spare) {
  auto p = Place(j);
  if (!p) return TryResult::kNoFit;
  const double rt = ctx_.run_time(j, *p);
  if (spare != nullptr && now + rt > shadow_time_) {
    // Would still run at the head's shadow: only on capacity the head does not need, counted
    // conservatively in head members (each member of this job may break one of the head's).
    const int hg = job(shadow_head_).gang.gpus_per_member;
    const long cost =
        static_cast<long>(job(j).gang.members) * ((job(j).gang.gpus_per_member + hg - 1) / hg);
    if (cost > *spare) return TryResult::kHeld;
    *spare -= cost;
  }
  Take(j, *p);
  Running run{*p, now + rt};
  by_end_.insert({run.end, j});
  running_[j] = run;
  out->push_back(Started{j, std::move(*p)});
  return TryResult::kStarted;
}

std::vector<Started> GangPolicy::Schedule(double now) {
  std::vector<Started> out;
  const bool full = freed_;
  freed_ = false;
  if (!full && fresh_.empty()) return out;
  // Placement is monotone in gang size for every policy here: once M members of a shape fail,
  // larger gangs of the same shape fail too (in this pass).
  std::map<std::tuple<int, std::string, std::string>, int> min_failed;
  auto key = [&](int j) {
    const GangSpec& s = job(j).gang;
    return std::make_tuple(s.gpus_per_member, s.required_tier, s.preferred_tier);
  };
  long free_gpus = cluster().FreeHealthy(0);
  bool blocked = false;
  long spare = 0;
  std::vector<int> still;
  still.reserve(queue_.size());
  for (int j : queue_) {
    const bool fresh = fresh_.count(j) > 0;
    bool started = false;
    const GangSpec& s = job(j).gang;
    if ((full || fresh) && s.total_gpus() <= free_gpus) {
      auto it = min_failed.find(key(j));
      if (it == min_failed.end() || s.members < it->second) {
        TryResult r = TryStart(j, now, &out, blocked ? &spare : nullptr);
        started = r == TryResult::kStarted;
        if (started) {
          free_gpus -= s.total_gpus();
        } else if (r == TryResult::kNoFit) {
          min_failed[key(j)] = s.members;
        }
      }
    }
    if (started) continue;
    still.push_back(j);
    if (queueing_ == Queueing::kBackfill && !blocked) {
      blocked = true;
      if (full || !out.empty() || shadow_head_ != j) ComputeShadow(j, now);
      spare = shadow_spare_gpus_;
    }
  }
  queue_ = std::move(still);
  fresh_.clear();
  if (!out.empty()) shadow_head_ = -1;  // running set changed: recompute next time
  return out;
}

}  // namespace topogang::sim
