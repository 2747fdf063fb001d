#include "scheduler/replacement.h"

#include <algorithm>
#include <map>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/node_mask.h"
#include "scheduler/planner.h"

namespace topogang {
namespace {

// A name no real gang has (gang names are Kubernetes names or "namespace/name").
constexpr char kHoldName[] = "\x1ftopogang/replacement-hold";

// The GPUs promised so far, held in the scheduler as one hidden gang, so that planning the next
// member sees them used. Released when the proposal is done, whatever its outcome.
class Holds {
 public:
  explicit Holds(GangScheduler& s) : s_(s) {
    GangSpec spec;
    spec.name = kHoldName;
    ok_ = s_.Adopt(spec, Placement{}, GangState::kRunning, absl::InfinitePast()).ok();
  }
  ~Holds() {
    if (ok_) s_.Release(kHoldName).IgnoreError();
  }
  Holds(const Holds&) = delete;
  Holds& operator=(const Holds&) = delete;
  bool ok() const { return ok_; }
  absl::Status Add(const MemberPlacement& m) {
    return s_.AdoptMember(kHoldName, count_++, m, /*require_healthy=*/false);
  }

 private:
  GangScheduler& s_;
  bool ok_ = false;
  int count_ = 0;
};

// Distinct ancestors at `level` of `nodes`, the one holding most of them first.
std::vector<int> ScopesAt(const Cluster& c, std::span<const int> nodes, int level) {
  std::map<int, int> count;
  for (int n : nodes) ++count[c.AncestorAt(c.NodeDomain(n), level)];
  std::vector<std::pair<int, int>> order;
  for (auto [d, k] : count) order.emplace_back(-k, d);
  std::sort(order.begin(), order.end());
  std::vector<int> out;
  for (auto [k, d] : order) out.push_back(d);
  return out;
}

// The slice-tier domain with room for `need` members closest to `anchors` (inside `home` when
// there are none): the survivors' own slice domains first, then widening one level at a time,
// never above `top_level`. Among domains of one scope, the tightest that fits (best fit keeps
// the big holes for whole gangs). -1 when none has room.
int NearestSliceDomain(const Cluster& c, std::span<const int> anchors, int slice_level,
                       int top_level, int home, int sku, int gpus, int need) {
  for (int level = slice_level; level >= top_level; --level) {
    std::vector<int> scopes = ScopesAt(c, anchors, level);
    if (anchors.empty() && level == top_level) scopes = {home >= 0 ? home : 0};
    for (int scope : scopes) {
      int best = -1, best_cap = 0;
      for (int d = c.LevelBegin(slice_level); d < c.LevelEnd(slice_level); ++d) {
        if (c.AncestorAt(d, level) != scope) continue;
        const int cap = c.MemberCapacity(d, sku, gpus);
        if (cap >= need && (best < 0 || cap < best_cap)) best = d, best_cap = cap;
      }
      if (best >= 0) return best;
    }
  }
  return -1;
}

}  // namespace

absl::StatusOr<std::vector<MemberPlacement>> ProposeReplacement(GangScheduler& sched,
                                                                absl::string_view gang,
                                                                const std::vector<int>& lost,
                                                                const ReplacementOptions& o) {
  const GangRecord* rec = sched.Find(gang);
  if (!rec) return absl::NotFoundError(absl::StrCat("no gang '", gang, "'"));
  if (lost.empty()) return std::vector<MemberPlacement>{};
  const Cluster& c = sched.cluster();
  const GangSpec spec = rec->spec;  // copies: the holds below change the scheduler's map
  const std::vector<MemberPlacement> members = rec->placement.members;
  const int size = static_cast<int>(members.size());
  const int g = spec.gpus_per_member;
  if (!o.old_nodes.empty() && o.old_nodes.size() != lost.size()) {
    return absl::InvalidArgumentError("old_nodes must name one node per lost member");
  }
  std::vector<char> is_lost(size, 0);
  std::vector<int> old(lost.size(), -1);
  for (size_t i = 0; i < lost.size(); ++i) {
    const int m = lost[i];
    if (m < 0 || m >= size || is_lost[m]) {
      return absl::InvalidArgumentError(
          absl::StrCat("gang '", gang, "': member ", m, " out of range or repeated"));
    }
    is_lost[m] = 1;
    old[i] = o.old_nodes.empty() ? members[m].node : o.old_nodes[i];
    if (old[i] < -1 || old[i] >= c.num_nodes()) {
      return absl::InvalidArgumentError(absl::StrCat("gang '", gang, "': bad old node"));
    }
  }
  std::vector<int> anchors;  // survivors, then every member placed by this proposal
  for (int m = 0; m < size; ++m) {
    if (!is_lost[m] && members[m].node >= 0) anchors.push_back(members[m].node);
  }
  // The required-tier domain the gang lives in, and the SKU it runs on.
  int any_node = anchors.empty() ? -1 : anchors[0];
  for (size_t i = 0; any_node < 0 && i < old.size(); ++i) any_node = old[i];
  const int req = spec.required_tier.empty() ? -1 : c.LevelByName(spec.required_tier);
  const int home = req >= 0 && any_node >= 0 ? c.AncestorAt(c.NodeDomain(any_node), req) : -1;
  const int sku = spec.allow_mixed_sku || any_node < 0 ? kAnySku : c.node(any_node).sku;
  const int k = spec.slice.members;
  const int slice_level = k > 0 ? c.LevelByName(spec.slice.tier) : -1;

  // Per lost member, the slice-tier domain its surviving slice-mates are in (-1: no slices, or
  // the whole slice is lost: an orphan, placed as a unit).
  std::vector<int> target(lost.size(), -1);
  std::map<int, std::vector<int>> orphans;  // slice -> indices into `lost`
  if (slice_level >= 0) {
    for (size_t i = 0; i < lost.size(); ++i) {
      const int s = lost[i] / k;
      for (int m = s * k; m < std::min(size, (s + 1) * k) && target[i] < 0; ++m) {
        if (!is_lost[m] && members[m].node >= 0) {
          target[i] = c.AncestorAt(c.NodeDomain(members[m].node), slice_level);
        }
      }
      if (target[i] < 0) orphans[s].push_back(static_cast<int>(i));
    }
  }
  const auto in = [&](int node, int domain) {
    return domain < 0 || c.AncestorAt(c.NodeDomain(node), c.domain(domain).level) == domain;
  };

  std::vector<MemberPlacement> out(lost.size());
  std::vector<char> done(lost.size(), 0);
  Holds holds(sched);
  if (!holds.ok()) return absl::InternalError("a replacement proposal is already in progress");

  // 1. Spares in the lost node's domain (members whose slice, if any, has survivors).
  const SparePool* pool = o.spares;
  for (size_t i = 0; pool && i < lost.size(); ++i) {
    if (old[i] < 0 || (slice_level >= 0 && target[i] < 0)) continue;
    const Domain& d = c.domain(c.AncestorAt(c.NodeDomain(old[i]), pool->level()));
    for (auto it = std::lower_bound(pool->nodes().begin(), pool->nodes().end(), d.node_begin);
         !done[i] && it != pool->nodes().end() && *it < d.node_end; ++it) {
      const int n = *it;
      if (n == old[i] || (sku != kAnySku && c.node(n).sku != sku)) continue;
      if (!in(n, home) || !in(n, target[i])) continue;
      MemberPlacement mp{n, {}};
      const NodeInfo& info = c.node(n);
      for (int gpu = info.gpu_begin; gpu < info.gpu_begin + info.gpus; ++gpu) {
        if (c.IsUsable(gpu) && static_cast<int>(mp.gpus.size()) < g) mp.gpus.push_back(gpu);
      }
      if (static_cast<int>(mp.gpus.size()) < g || !holds.Add(mp).ok()) continue;
      out[i] = std::move(mp);
      anchors.push_back(n);
      done[i] = 1;
    }
  }

  // 2. Ordinary free GPUs, spares hidden.
  NodeMask masked(sched, pool ? pool->nodes() : std::vector<int>{});
  const Planner planner = sched.planner();
  const auto place = [&](const GangSpec& s, const std::vector<int>& idx,
                         std::span<const int> near) -> absl::Status {
    auto p = planner.PlanNear(s, static_cast<int>(idx.size()), near);
    if (!p.ok()) return p.status();
    if (p->size() != idx.size()) return absl::InternalError("planner returned too few members");
    for (size_t j = 0; j < idx.size(); ++j) {
      if (absl::Status st = holds.Add((*p)[j]); !st.ok()) return st;
      out[idx[j]] = (*p)[j];
      done[idx[j]] = 1;
    }
    for (const MemberPlacement& mp : *p) anchors.push_back(mp.node);
    return absl::OkStatus();
  };
  GangSpec within_slice = spec;  // planned inside one slice-tier domain, no slicing of its own
  within_slice.required_tier = spec.slice.tier;
  within_slice.slice = {};
  const auto must_replan = [&](const std::vector<int>& idx, absl::string_view why) {
    std::vector<int> ordinals;
    for (int i : idx) ordinals.push_back(lost[i]);
    return absl::FailedPreconditionError(absl::StrCat("gang '", gang, "': the slice of member(s) ",
                                                      absl::StrJoin(ordinals, ","), " ", why,
                                                      "; the gang must be re-planned whole"));
  };

  // 2a. Members whose slice has survivors: inside that slice's domain.
  std::map<int, std::vector<int>> by_target;
  for (size_t i = 0; i < lost.size(); ++i) {
    if (!done[i] && target[i] >= 0) by_target[target[i]].push_back(static_cast<int>(i));
  }
  for (const auto& [domain, idx] : by_target) {
    std::vector<int> near;
    for (int n : anchors) {
      if (in(n, domain)) near.push_back(n);
    }
    if (!place(within_slice, idx, near).ok()) {
      return must_replan(
          idx, absl::StrCat("has no room for ", idx.size(), " more member(s) of ", g,
                            " GPUs in its ", c.LevelName(slice_level), " ", c.DomainPath(domain)));
    }
  }
  // 2b. Slices lost whole: a fresh slice-tier domain each, nearest to the gang.
  for (const auto& [slice, idx] : orphans) {
    const int top = std::max(0, req);
    const int d = NearestSliceDomain(c, anchors, slice_level, top, home, sku, g,
                                     static_cast<int>(idx.size()));
    if (d < 0 || !place(within_slice, idx, std::vector<int>{c.domain(d).node_begin}).ok()) {
      return must_replan(
          idx, absl::StrCat("lost every member and no ", c.LevelName(slice_level),
                            " within reach has room for ", idx.size(), " members of ", g, " GPUs"));
    }
  }
  // 2c. The rest (gangs without slices): nearest to the survivors.
  std::vector<int> rest;
  for (size_t i = 0; i < lost.size(); ++i) {
    if (!done[i]) rest.push_back(static_cast<int>(i));
  }
  if (!rest.empty()) {
    if (absl::Status st = place(spec, rest, std::vector<int>(anchors)); !st.ok()) return st;
  }
  return out;
}

}  // namespace topogang
