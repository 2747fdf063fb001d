// GangQueue's holds (scheduler/queue_policy.h): which domain a starved gang holds in, which of its
// nodes it claims and when they should be whole, what it holds now, and the caches behind those
// answers. Split from queue_policy.cc, which keeps the order, patience and the pass itself.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "scheduler/gang_skus.h"
#include "scheduler/queue_policy.h"

namespace topogang {

void GangQueue::DropHold(GangScheduler& sched, const Entry& e) {
  std::string hold = HoldName(e.spec.name);
  if (sched.Find(hold)) (void)sched.Release(hold);
}

int GangQueue::PickHoldDomain(const GangScheduler& sched, const GangSpec& gang, absl::Time now,
                              int* hold_sku) const {
  const Cluster& c = sched.cluster();
  int top = gang.required_tier.empty() ? 0 : std::max(0, c.LevelByName(gang.required_tier));
  const std::vector<int> skus = CandidateSkus(c, gang);
  for (int level = c.node_level(); level >= top; --level) {
    if (c.MaxDomainGpus(level) < gang.total_gpus()) continue;
    int best = -1, best_sku = kAnySku, best_cap = -1, best_free = -1;
    absl::Time best_ready = absl::InfiniteFuture();
    // A gang that names no SKU holds on one, like its placement: a hold spread over two SKUs
    // would idle GPUs it could never use together.
    for (int sku : skus) {
      for (int d = c.LevelBegin(level); d < c.LevelEnd(level); ++d) {
        if (PotentialMembers(sched, d, sku, gang.gpus_per_member) < gang.members) continue;
        int cap = c.MemberCapacity(d, sku, gang.gpus_per_member);
        int free = c.FreeHealthy(d, sku);
        const absl::Time ready =
            options_.hold_domain_soonest
                ? ReadyAt(sched, d, sku, gang.gpus_per_member, gang.members, now)
                : absl::InfiniteFuture();
        if (best < 0 || ready < best_ready ||
            (ready == best_ready && (cap > best_cap || (cap == best_cap && free > best_free)))) {
          best = d, best_sku = sku, best_cap = cap, best_free = free, best_ready = ready;
        }
      }
    }
    if (best >= 0) {
      *hold_sku = best_sku;
      return best;
    }
  }
  return -1;
}

bool GangQueue::CouldStartWhenDrained(GangScheduler& sched, const GangSpec& gang,
                                      const NodeExclusion& hold_exclude) const {
  const Cluster& c = sched.cluster();
  const int top = gang.required_tier.empty() ? 0 : std::max(0, c.LevelByName(gang.required_tier));
  const int slice_level =
      gang.slice.members > 1 ? std::max(0, c.LevelByName(gang.slice.tier)) : c.node_level() + 1;
  const int k = std::max(1, gang.slice.members);
  // The planner places a gang on one SKU unless it may mix them (planner.cc), so a gang that
  // names none is tried on each in turn.
  const std::vector<int> skus = CandidateSkus(c, gang);
  const std::vector<int> masked =
      hold_exclude ? sched.MaskNodes(hold_exclude(gang)) : std::vector<int>{};
  // Members a drained domain holds: in whole slices of k, each inside one slice-tier domain,
  // when the slice tier is at or below the domain's level.
  auto members = [&](int d, int sku) {
    const Domain& dom = c.domain(d);
    if (slice_level < dom.level || slice_level > c.node_level()) {
      return PotentialMembers(sched, d, sku, gang.gpus_per_member) / k * k;
    }
    int total = 0;
    for (int s = c.LevelBegin(slice_level); s < c.LevelEnd(slice_level); ++s) {
      const Domain& sub = c.domain(s);
      if (sub.node_begin >= dom.node_begin && sub.node_end <= dom.node_end) {
        total += PotentialMembers(sched, s, sku, gang.gpus_per_member) / k * k;
      }
    }
    return total;
  };
  // A domain holds at most what its parent does, so the widest tier it may use is enough.
  bool fits = false;
  for (int sku : skus) {
    for (int d = c.LevelBegin(top); d < c.LevelEnd(top) && !fits; ++d) {
      fits = members(d, sku) >= gang.members;
    }
  }
  sched.UnmaskNodes(masked);
  return fits;
}

bool GangQueue::BackfillBlocks(const GangScheduler& sched, const Entry& e,
                               const std::vector<int>& nodes) const {
  const Cluster& c = sched.cluster();
  std::vector<int> younger(c.num_nodes(), 0);  // GPUs of gangs started after e arrived
  for (const auto& [name, rec] : sched.gangs()) {
    if (rec.state == GangState::kHeld || rec.reserved_at <= e.enqueued) continue;
    for (const MemberPlacement& m : rec.placement.members) {
      if (m.node >= 0) younger[m.node] += static_cast<int>(m.gpus.size());  // -1: released
    }
  }
  int members = 0;
  for (int n : nodes) {
    members += std::min(c.node(n).gpus, c.NodeFreeHealthy(n) + younger[n]) / e.spec.gpus_per_member;
  }
  return members >= e.spec.members;
}

namespace {

// When a gang is estimated to end: started + its run-time estimate (else its limit);
// InfiniteFuture without either, or once it has outrun it (nothing more is known then).
absl::Time EstimatedEnd(const GangRecord& rec, absl::Time now) {
  const absl::Duration est = rec.spec.runtime_estimate > absl::ZeroDuration()
                                 ? rec.spec.runtime_estimate
                                 : rec.spec.runtime_limit;
  if (rec.state == GangState::kHeld || est <= absl::ZeroDuration()) {
    return absl::InfiniteFuture();
  }
  const absl::Time end = rec.reserved_at + est;
  return end < now ? absl::InfiniteFuture() : end;
}

}  // namespace

int GangQueue::PotentialMembers(const GangScheduler& sched, int domain, int sku, int g) const {
  if (potential_version_ != sched.health_version()) {
    potential_.clear();
    potential_version_ = sched.health_version();
  }
  auto [it, inserted] = potential_.try_emplace(ShapeKey{domain, sku, g}, 0);
  if (!inserted) return it->second;
  const Cluster& c = sched.cluster();
  const Domain& d = c.domain(domain);
  int total = 0;
  for (int n = d.node_begin; n < d.node_end; ++n) {
    if (c.NodeCordoned(n) || (sku != kAnySku && c.node(n).sku != sku)) continue;
    const NodeInfo& info = c.node(n);  // not cordoned: healthy = not faulty
    total +=
        static_cast<int>(c.healthy_mask().CountRange(info.gpu_begin, info.gpu_begin + info.gpus)) /
        g;
  }
  it->second = total;
  return total;
}

void GangQueue::RefreshNodeTable(const GangScheduler& sched, absl::Time now) const {
  const Cluster& c = sched.cluster();
  if (table_version_ != sched.version() || table_now_ != now) {
    claim_order_.clear();
    table_version_ = sched.version();
    table_now_ = now;
    // Per node: gangs running there and when the last of them is estimated to end.
    gangs_on_.assign(c.num_nodes(), 0);
    free_at_.assign(c.num_nodes(), now);
    for (const auto& [name, rec] : sched.gangs()) {
      const absl::Time end = EstimatedEnd(rec, now);
      int last = -1;
      for (const MemberPlacement& m : rec.placement.members) {
        if (m.node < 0) continue;  // a member released on its own (GangScheduler::ReleaseMember)
        if (m.node != last) ++gangs_on_[m.node];  // members of one gang on a node are adjacent
        last = m.node;
        free_at_[m.node] = std::max(free_at_[m.node], end);
      }
    }
  }
}

const GangQueue::ClaimOrderNodes& GangQueue::NodesInClaimOrder(const GangScheduler& sched,
                                                               int domain, int sku, int g,
                                                               absl::Time now) const {
  const Cluster& c = sched.cluster();
  RefreshNodeTable(sched, now);
  auto [it, inserted] = claim_order_.try_emplace(ShapeKey{domain, sku, g});
  ClaimOrderNodes& out = it->second;
  if (!inserted) return out;
  const Domain& d = c.domain(domain);
  // Claim the nodes closest to being free, enough to hold the gang once they are.
  struct Keyed {
    absl::Time at;
    int gangs, neg_free, node;
    bool operator<(const Keyed& o) const {
      return std::tie(at, gangs, neg_free, node) < std::tie(o.at, o.gangs, o.neg_free, o.node);
    }
  };
  std::vector<Keyed> keyed;
  for (int n = d.node_begin; n < d.node_end; ++n) {
    if (c.NodeCordoned(n) || (sku != kAnySku && c.node(n).sku != sku)) continue;
    if (c.node(n).gpus < g) continue;
    out.free_members += c.NodeFreeHealthy(n) / g;
    keyed.push_back({options_.claim_order == ClaimOrder::kSoonestFree ? free_at_[n] : now,
                     options_.claim_order == ClaimOrder::kMostFree ? 0 : gangs_on_[n],
                     -c.NodeFreeHealthy(n), n});
  }
  std::sort(keyed.begin(), keyed.end());
  out.nodes.reserve(keyed.size());
  for (const Keyed& k : keyed) out.nodes.push_back(k.node);
  return out;
}

absl::Time GangQueue::ReadyAt(const GangScheduler& sched, int domain, int sku, int g, int members,
                              absl::Time now) const {
  RefreshNodeTable(sched, now);
  const Cluster& c = sched.cluster();
  const Domain& d = c.domain(domain);
  std::vector<std::pair<absl::Time, int>> at;  // (free at, members) per node
  for (int n = d.node_begin; n < d.node_end; ++n) {
    if (c.NodeCordoned(n) || (sku != kAnySku && c.node(n).sku != sku)) continue;
    if (c.node(n).gpus >= g) at.push_back({free_at_[n], c.node(n).gpus / g});
  }
  std::sort(at.begin(), at.end());
  int sum = 0;
  for (const auto& [t, m] : at) {
    if ((sum += m) >= members) return t;
  }
  return absl::InfiniteFuture();
}

bool GangQueue::GrowHold(GangScheduler& sched, Entry& e, absl::Time now) {
  const Cluster& c = sched.cluster();
  const GangSpec& g = e.spec;
  if (e.hold_domain < 0 || (!e.holding && options_.hold_domain_soonest) ||
      PotentialMembers(sched, e.hold_domain, e.hold_sku, g.gpus_per_member) < g.members) {
    e.hold_domain = PickHoldDomain(sched, g, now, &e.hold_sku);
  }
  const int sku = e.hold_sku;
  if (e.hold_domain < 0) {
    e.claim.clear();
    return false;  // can never fit (too big, or drained): nothing worth holding
  }
  const ClaimOrderNodes& order =
      NodesInClaimOrder(sched, e.hold_domain, sku, g.gpus_per_member, now);
  const std::vector<int>& nodes = order.nodes;
  const int free_members = order.free_members;
  const int target =
      std::max(g.members, static_cast<int>(g.members * options_.claim_factor + 0.999));
  e.claim.clear();
  e.ready_at = now;
  for (int n = 0, members = 0; n < static_cast<int>(nodes.size()) && members < target; ++n) {
    members += c.node(nodes[n]).gpus / g.gpus_per_member;
    e.claim.push_back(nodes[n]);
    e.ready_at = std::max(e.ready_at, free_at_[nodes[n]]);
  }
  if (!e.holding) {
    if (now < e.hold_retry_at) return false;
    const double shortfall = static_cast<double>(g.members - free_members) * g.gpus_per_member;
    const bool nearly_ready = options_.hold_ready_fraction > 0 &&
                              free_members >= options_.hold_ready_fraction * g.members;
    const bool small_shortfall = shortfall <= options_.hold_max_shortfall_share * c.num_gpus();
    const bool waited_too_long = now - e.enqueued >= options_.hold_anyway_after;
    const bool soon =
        options_.hold_horizon > absl::ZeroDuration() && e.ready_at - now <= options_.hold_horizon;
    if (!nearly_ready && !small_shortfall && !waited_too_long && !soon &&
        !(options_.hold_when_backfill_blocks && BackfillBlocks(sched, e, nodes))) {
      return false;
    }
    e.holding = true;
    e.hold_since = now;
  } else if (options_.hold_timeout > absl::ZeroDuration() &&
             now - e.hold_since >= options_.hold_timeout) {
    e.holding = false;  // give the GPUs back to backfill for a while
    e.hold_retry_at = now + options_.hold_timeout;
    return false;
  }
  // Hold the free GPUs of the claim now; GPUs freed there later are held on the next Schedule().
  HoldClaim(sched, e, now);
  return true;  // the claim stands even when nothing is free yet
}

void GangQueue::HoldClaim(GangScheduler& sched, const Entry& e, absl::Time now) {
  const Cluster& c = sched.cluster();
  const int g = e.spec.gpus_per_member;
  Placement hold;
  for (int n : e.claim) {
    if (c.NodeCordoned(n)) continue;
    MemberPlacement mp{n, {}};
    for (int i = 0; i < c.node(n).gpus; ++i) {
      const int gpu = c.node(n).gpu_begin + i;
      if (c.IsUsable(gpu)) mp.gpus.push_back(gpu);
    }
    if (options_.whole_member_holds) {
      // Leave a partial member's worth to the small jobs already on the node.
      mp.gpus.resize(mp.gpus.size() / g * g);
    }
    if (!mp.gpus.empty()) hold.members.push_back(std::move(mp));
  }
  if (hold.members.empty()) return;
  GangSpec spec;
  spec.name = HoldName(e.spec.name);
  spec.members = static_cast<int>(hold.members.size());
  (void)sched.Adopt(spec, std::move(hold), GangState::kHeld, now);
}

absl::StatusOr<const GangRecord*> GangQueue::ReserveOnLentHolds(GangScheduler& sched,
                                                                const Entry& e,
                                                                const std::vector<Entry>& entries,
                                                                const std::vector<size_t>& lenders,
                                                                absl::Time now) {
  for (size_t h : lenders) DropHold(sched, entries[h]);
  auto r = sched.Reserve(e.spec, now);
  for (size_t h : lenders) HoldClaim(sched, entries[h], now);
  return r;
}

void GangQueue::ForgetModel() {
  for (Entry& e : waiting_) {
    e.hold_domain = -1;
    e.claim.clear();
    e.ready_at = absl::InfiniteFuture();
  }
  // The caches need nothing: they are keyed by the scheduler's versions, which no other
  // scheduler instance ever has (GangScheduler::version).
}

}  // namespace topogang
