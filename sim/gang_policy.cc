#include "sim/gang_policy.h"

#include <algorithm>
#include <tuple>

#include "absl/time/time.h"

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

std::vector<int> GangPolicy::CandidateSkus(int j) const {
  const Cluster& c = cluster();
  const std::string& want = job(j).gang.sku;
  if (!want.empty()) return {c.FindSku(want)};  // the engine checked that it exists
  if (c.num_skus() <= 1) return {kAnySku};
  std::vector<int> all(c.num_skus());
  for (int s = 0; s < c.num_skus(); ++s) all[s] = s;
  return all;
}

std::optional<std::vector<MemberPlacement>> GangPolicy::Place(int j) {
  for (int sku : CandidateSkus(j)) {
    if (auto p = PlaceSku(j, sku)) return p;
  }
  return std::nullopt;
}

int GangPolicy::RequiredLevel(int j) const {
  const std::string& t = job(j).gang.required_tier;
  if (t.empty()) return 0;
  return std::max(0, cluster().LevelByName(t));
}

void GangPolicy::Enqueue(int j, double now) {
  // Priority first (higher first), then arrival (job indices follow arrival).
  auto before = [&](int a, int b) {
    const int pa = job(a).gang.priority, pb = job(b).gang.priority;
    return pa != pb ? pa > pb : a < b;
  };
  queue_.insert(std::lower_bound(queue_.begin(), queue_.end(), j, before), j);
  fresh_.insert(j);
  first_enqueued_.try_emplace(j, now);
  bf_dirty_ = true;
}

double GangPolicy::FirstEnqueued(int j) const {
  auto it = first_enqueued_.find(j);
  return it == first_enqueued_.end() ? now_ : it->second;
}

const std::vector<MemberPlacement>* GangPolicy::RunningMembers(int j) const {
  auto it = running_.find(j);
  return it == running_.end() ? nullptr : &it->second.members;
}

double GangPolicy::NextWakeup() const {
  if (bf_.interval_s <= 0 || queue_.empty() || !bf_dirty_) return kNever;
  return next_bf_;
}

double GangPolicy::PlannedRunTime(int j, double actual) const {
  if (!bf_.use_time_limits) return actual;
  const double limit = absl::ToDoubleSeconds(job(j).gang.runtime_limit);
  return limit > 0 ? limit : bf_.max_time_s;
}

void GangPolicy::Finish(int j) {
  auto it = running_.find(j);
  if (it == running_.end()) return;
  Give(j, it->second.members);
  by_end_.erase({it->second.planned, j});
  running_.erase(it);
  freed_ = true;
  bf_dirty_ = true;
}

HealthResult GangPolicy::SetNodeDown(int node, bool down, bool fail, double now) {
  HealthResult r;
  now_ = now;
  SetCordoned(node, down);
  freed_ = true;  // capacity changed either way: re-evaluate the whole queue
  bf_dirty_ = true;
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
    by_end_.erase({run.planned, j});
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
  const std::vector<int> skus = CandidateSkus(head);
  const int sku = skus.size() == 1 ? skus[0] : kAnySku;
  std::vector<long> cap(c.LevelEnd(level) - base);
  long total = 0;
  for (size_t i = 0; i < cap.size(); ++i) {
    cap[i] = c.MemberCapacity(base + static_cast<int>(i), sku, g);
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
  for (const auto& [planned, j] : by_end_) {
    // A job past its time limit is planned to end now (Slurm would kill it there).
    const double end = std::max(planned, now);
    for (const MemberPlacement& m : running_[j].members) {
      if (c.NodeCordoned(m.node) || (sku != kAnySku && c.node(m.node).sku != sku)) continue;
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
  const double planned = PlannedRunTime(j, rt);
  if (spare != nullptr && now + planned > shadow_time_) {
    // Would still run at the head's shadow: only on capacity the head does not need, counted
    // conservatively in head members (each member of this job may break one of the head's).
    const int hg = job(shadow_head_).gang.gpus_per_member;
    const long cost =
        static_cast<long>(job(j).gang.members) * ((job(j).gang.gpus_per_member + hg - 1) / hg);
    if (cost > *spare) return TryResult::kHeld;
    *spare -= cost;
  }
  Take(j, *p);
  Running run{*p, now + rt, now + planned};
  by_end_.insert({run.planned, j});
  running_[j] = run;
  out->push_back(Started{j, std::move(*p)});
  return TryResult::kStarted;
}

std::vector<Started> GangPolicy::Schedule(double now) {
  now_ = now;
  std::vector<Started> out;
  // Backfill pass, or (between bf_interval passes) the main scheduler: strict queue order,
  // stopping at the first job that does not start.
  const bool bf_pass = bf_.interval_s <= 0 || (now >= next_bf_ && bf_dirty_);
  const bool full = freed_ || (bf_pass && bf_.interval_s > 0);
  freed_ = false;
  if (!full && fresh_.empty()) return out;
  if (bf_pass && bf_.interval_s > 0) {
    next_bf_ = now + bf_.interval_s;
    bf_dirty_ = false;
  }
  // Placement is monotone in gang size for every policy here: once M members of a shape fail,
  // larger gangs of the same shape fail too (in this pass).
  std::map<std::tuple<int, std::string, std::string, std::string>, int> min_failed;
  auto key = [&](int j) {
    const GangSpec& s = job(j).gang;
    return std::make_tuple(s.gpus_per_member, s.required_tier, s.preferred_tier, s.sku);
  };
  long free_gpus = cluster().FreeHealthy(0);
  bool blocked = false;
  long spare = 0;
  int tested = 0;
  std::vector<int> still;
  still.reserve(queue_.size());
  for (int j : queue_) {
    const bool fresh = fresh_.count(j) > 0;
    bool started = false;
    const GangSpec& s = job(j).gang;
    const bool may_try = !blocked || (bf_pass && tested < bf_.max_job_test);
    if (may_try && (full || fresh) && s.total_gpus() <= free_gpus) {
      if (blocked) ++tested;
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
      if (shadow_time_ > now + bf_.window_s) {
        // Beyond bf_window: the head gets no reservation, later jobs backfill freely.
        shadow_time_ = kNever;
        spare = 1L << 40;
      } else {
        spare = shadow_spare_gpus_;
      }
    }
  }
  queue_ = std::move(still);
  // Jobs not tried in a main-scheduler pass stay "fresh" for the next backfill pass.
  if (bf_pass) fresh_.clear();
  if (!out.empty()) shadow_head_ = -1;  // running set changed: recompute next time
  return out;
}

}  // namespace topogang::sim
