#include "scheduler/queue_policy.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/tier_lapse.h"

namespace topogang {
namespace {

// The span bandwidth of the narrowest tier whose largest domain holds the gang: the best any
// placement of its shape gets on this cluster (Cluster::SpanBandwidthGbps).
double BestBandwidth(const Cluster& c, const GangSpec& g) {
  if (g.members <= 1) return 0;
  for (int level = c.node_level(); level > 0; --level) {
    if (c.MaxDomainGpus(level) >= g.total_gpus()) return c.SpanBandwidthGbps(level);
  }
  return c.SpanBandwidthGbps(0);
}

}  // namespace

std::string GangQueue::HoldName(absl::string_view gang) { return absl::StrCat("hold/", gang); }

absl::Status GangQueue::Enqueue(const GangSpec& gang, absl::Time now) {
  if (Contains(gang.name)) {
    return absl::AlreadyExistsError(absl::StrCat("gang '", gang.name, "' is already waiting"));
  }
  Entry e;
  e.spec = gang;
  e.enqueued = now;
  waiting_.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Time GangQueue::NextDeadline(absl::Time now) const {
  absl::Time next = absl::InfiniteFuture();
  for (const Entry& e : waiting_) {
    if (e.could_start != absl::InfiniteFuture()) {
      const absl::Time t = e.could_start + options_.locality_patience;
      if (t > now) next = std::min(next, t);
    }
    if (e.thin_since != absl::InfiniteFuture()) {
      const absl::Time t = e.thin_since + options_.thin_side_patience;
      if (t > now) next = std::min(next, t);
    }
    if (e.hold_domain < 0 && e.spec.total_gpus() >= options_.hold_min_gpus) {
      const absl::Time t = e.enqueued + options_.starvation_threshold;
      if (t > now) next = std::min(next, t);
    }
    if (!e.spec.required_tier.empty()) {
      const absl::Time t = e.enqueued + e.spec.required_tier_max_wait;
      if (t > now) next = std::min(next, t);
    }
  }
  return next;
}

bool GangQueue::Contains(absl::string_view name) const { return Find(name) != nullptr; }

const GangQueue::Entry* GangQueue::Find(absl::string_view name) const {
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [&](const Entry& e) { return e.spec.name == name; });
  return it == waiting_.end() ? nullptr : &*it;
}

bool GangQueue::Remove(GangScheduler& sched, absl::string_view name) {
  auto it = std::find_if(waiting_.begin(), waiting_.end(),
                         [&](const Entry& e) { return e.spec.name == name; });
  if (it == waiting_.end()) return false;
  DropHold(sched, *it);
  waiting_.erase(it);
  return true;
}

void GangQueue::DropHold(GangScheduler& sched, const Entry& e) {
  std::string hold = HoldName(e.spec.name);
  if (sched.Find(hold)) (void)sched.Release(hold);
}

int GangQueue::PickHoldDomain(const GangScheduler& sched, const GangSpec& gang,
                              absl::Time now) const {
  const Cluster& c = sched.cluster();
  int top = gang.required_tier.empty() ? 0 : std::max(0, c.LevelByName(gang.required_tier));
  int sku = gang.sku.empty() ? kAnySku : c.FindSku(gang.sku);
  if (!gang.sku.empty() && sku < 0) return -1;
  for (int level = c.node_level(); level >= top; --level) {
    if (c.MaxDomainGpus(level) < gang.total_gpus()) continue;
    int best = -1, best_cap = -1, best_free = -1;
    absl::Time best_ready = absl::InfiniteFuture();
    for (int d = c.LevelBegin(level); d < c.LevelEnd(level); ++d) {
      if (PotentialMembers(sched, d, sku, gang.gpus_per_member) < gang.members) continue;
      int cap = c.MemberCapacity(d, sku, gang.gpus_per_member);
      int free = c.FreeHealthy(d, sku);
      const absl::Time ready = options_.hold_domain_soonest
                                   ? ReadyAt(sched, d, sku, gang.gpus_per_member, gang.members, now)
                                   : absl::InfiniteFuture();
      if (best < 0 || ready < best_ready ||
          (ready == best_ready && (cap > best_cap || (cap == best_cap && free > best_free)))) {
        best = d, best_cap = cap, best_free = free, best_ready = ready;
      }
    }
    if (best >= 0) return best;
  }
  return -1;
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

bool GangQueue::ThinSideAvoidable(const GangScheduler& sched, const GangSpec& gang,
                                  const Placement& p) const {
  const Cluster& c = sched.cluster();
  if (p.thin_level < 0 || p.members.empty() || p.members.front().node < 0) return false;
  const int node = p.members.front().node;
  const int sku = gang.allow_mixed_sku ? kAnySku : c.node(node).sku;
  const int g = gang.gpus_per_member;
  // A part of `os` nodes, in members of this shape.
  const double part = c.UplinkOversubscription(p.thin_level) * std::max(1, c.node(node).gpus / g);
  long in_parts = 0;
  for (int d = c.LevelBegin(p.thin_level); d < c.LevelEnd(p.thin_level); ++d) {
    const int m = PotentialMembers(sched, d, sku, g);
    if (m >= gang.members) return true;
    if (m >= part) in_parts += m;
  }
  return gang.members >= 2 * part && in_parts >= gang.members;
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
  int sku = g.sku.empty() ? kAnySku : c.FindSku(g.sku);
  if (e.hold_domain < 0 || (!e.holding && options_.hold_domain_soonest) ||
      PotentialMembers(sched, e.hold_domain, sku, g.gpus_per_member) < g.members) {
    e.hold_domain = PickHoldDomain(sched, g, now);
  }
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

bool GangQueue::Plannable(const GangScheduler& sched, const GangSpec& gang) {
  // Planner::Plan's InvalidArgument cases; everything else it refuses is ResourceExhausted.
  if (!ValidateGang(gang).ok()) return false;
  const Cluster& c = sched.cluster();
  int levels[3] = {-1, -1, -1};
  const std::string* tiers[3] = {&gang.required_tier, &gang.preferred_tier, &gang.slice.tier};
  for (int i = 0; i < 3; ++i) {
    if (tiers[i]->empty()) continue;
    levels[i] = c.LevelByName(*tiers[i]);
    if (levels[i] < 0) return false;
  }
  return !(levels[2] >= 0 && levels[0] >= 0 && levels[2] < levels[0]);
}

void GangQueue::ForgetModel() {
  for (Entry& e : waiting_) {
    e.hold_domain = -1;
    e.claim.clear();
    e.ready_at = absl::InfiniteFuture();
  }
  claim_order_.clear();
  potential_.clear();
}

std::vector<std::string> GangQueue::Schedule(GangScheduler& sched, absl::Time now,
                                             const NodeExclusion& exclude) {
  if (sched.model_id() != model_id_) {
    ForgetModel();
    model_id_ = sched.model_id();
  }
  const bool smallest = options_.order == QueueOrder::kSmallestFirst;
  std::stable_sort(waiting_.begin(), waiting_.end(), [&](const Entry& a, const Entry& b) {
    if (a.spec.priority != b.spec.priority) return a.spec.priority > b.spec.priority;
    if (smallest && a.spec.total_gpus() != b.spec.total_gpus()) {
      return a.spec.total_gpus() < b.spec.total_gpus();
    }
    return a.enqueued < b.enqueued;
  });
  std::vector<std::string> started;
  std::vector<Entry> kept;
  kept.reserve(waiting_.size());
  std::vector<size_t> holders;  // entries of `kept` holding GPUs in this pass
  // Within one pass, once a gang of some shape found no room, a larger one of the same shape
  // finds none either: the planner places a gang iff some domain at or below its required tier
  // has room for all its members (or slices), which only gets harder with more members, and
  // capacity only shrinks while the pass starts gangs and takes holds. So the planner is skipped
  // for such a gang, and for one needing more GPUs than are free at all. Not for gangs planned
  // with their own exclusions, with their own hold dropped or lent held GPUs (those plans see
  // GPUs the others did not), nor after such a gang in the pass (giving a hold up, or a hold
  // rebuilt in whole members after a loan, can free GPUs): then the record starts over. Only
  // for gangs the planner would refuse with ResourceExhausted, not InvalidArgument.
  using Shape = std::tuple<int, std::string, std::string, std::string, int, std::string, bool>;
  std::map<Shape, int> failed;  // shape -> fewest members that found no room
  for (Entry& entry : waiting_) {
    kept.push_back(std::move(entry));
    Entry& e = kept.back();
    if (TierLapsed(sched.cluster(), e.spec, now - e.enqueued)) {
      e.spec = LapseRequiredTier(sched.cluster(), std::move(e.spec));
      e.tier_relaxed = true;
    }
    const bool had_hold = sched.Find(HoldName(e.spec.name)) != nullptr;
    DropHold(sched, e);
    const bool may_borrow = options_.backfill_into_holds && !holders.empty() &&
                            e.spec.runtime_limit > absl::ZeroDuration();
    const bool prunable = !exclude && !had_hold && !may_borrow;
    const Shape shape{
        e.spec.gpus_per_member, e.spec.required_tier, e.spec.preferred_tier, e.spec.sku,
        e.spec.slice.members,   e.spec.slice.tier,    e.spec.allow_mixed_sku};
    absl::StatusOr<const GangRecord*> r = absl::ResourceExhaustedError("no room");
    std::vector<size_t> lenders;  // holds whose GPUs it was planned with
    bool thin_avoidable = false;
    auto f = failed.find(shape);
    const bool known_no_room = prunable &&
                               ((f != failed.end() && e.spec.members >= f->second) ||
                                e.spec.total_gpus() > sched.cluster().FreeHealthy(0)) &&
                               Plannable(sched, e.spec);
    if (!known_no_room) {
      const std::vector<int> masked =
          exclude ? sched.MaskNodes(exclude(e.spec)) : std::vector<int>{};
      r = sched.Reserve(e.spec, now);
      if (!r.ok() && may_borrow) {
        // Slurm's backfill rule: run on held GPUs when estimated to end before the hold starts.
        for (size_t h : holders) {
          if (kept[h].ready_at >= now + e.spec.runtime_limit) lenders.push_back(h);
        }
        if (!lenders.empty()) {
          r = ReserveOnLentHolds(sched, e, kept, lenders, now);
          failed.clear();
        }
      }
      // Judged while its excluded nodes are still masked: they must not count as room.
      thin_avoidable = r.ok() && (*r)->placement.thin_level >= 0 &&
                       options_.thin_side_patience > absl::ZeroDuration() &&
                       ThinSideAvoidable(sched, e.spec, (*r)->placement);
      sched.UnmaskNodes(masked);
      if (prunable && !r.ok() && r.status().code() == absl::StatusCode::kResourceExhausted) {
        auto [it, inserted] = failed.emplace(shape, e.spec.members);
        if (!inserted) it->second = std::min(it->second, e.spec.members);
      }
    }
    if (had_hold) failed.clear();
    e.declined.clear();
    const bool may_wait = r.ok() && !e.tier_relaxed && e.spec.total_gpus() < options_.hold_min_gpus;
    if (may_wait && options_.locality_patience > absl::ZeroDuration() &&
        (*r)->placement.bandwidth_gbps < BestBandwidth(sched.cluster(), e.spec)) {
      if (e.could_start == absl::InfiniteFuture()) e.could_start = now;
      if (now - e.could_start < options_.locality_patience) {
        e.declined = absl::StrCat(
            "waiting up to ", absl::FormatDuration(options_.locality_patience),
            " for a better-connected placement than the one that fits now (lowest common tier: ",
            sched.cluster().LevelName((*r)->placement.level), ")");
      }
    }
    bool thin_declined = false;
    if (may_wait && e.declined.empty() && thin_avoidable) {
      if (e.thin_since == absl::InfiniteFuture()) e.thin_since = now;
      if (now - e.thin_since < options_.thin_side_patience) {
        thin_declined = true;
        const Placement& p = (*r)->placement;
        const Cluster& c = sched.cluster();
        e.declined = absl::StrCat(
            "waiting up to ", absl::FormatDuration(options_.thin_side_patience),
            " for a placement without a thin side: the one that fits now has ", p.thin_nodes,
            " node", p.thin_nodes == 1 ? "" : "s", " in one ", c.LevelName(p.thin_level),
            ", whose uplinks are ", c.UplinkOversubscription(p.thin_level),
            ":1 oversubscribed, and would slow the whole gang");
      }
    }
    if (!e.declined.empty()) {
      (void)sched.Release(e.spec.name);  // wait for a better placement
      // What it borrowed is held again. Not after a locality-patience decline: there the
      // GPUs stay free for the rest of the pass, as measured for every table so far; holding
      // them again cost `gb200-nvl72` mean JCT (docs/placement-quality.md, "Thin sides").
      if (thin_declined) {
        for (size_t h : lenders) {
          DropHold(sched, kept[h]);
          HoldClaim(sched, kept[h], now);
        }
      }
      r = absl::ResourceExhaustedError(e.declined);
    }
    if (r.ok()) {
      started.push_back(e.spec.name);
      kept.pop_back();
      continue;
    }
    bool starved = now - e.enqueued >= options_.starvation_threshold &&
                   e.spec.total_gpus() >= options_.hold_min_gpus &&
                   r.status().code() == absl::StatusCode::kResourceExhausted;
    if (starved && static_cast<int>(holders.size()) < options_.max_holds &&
        GrowHold(sched, e, now)) {
      holders.push_back(kept.size() - 1);
    } else {
      e.hold_domain = -1;
      e.holding = false;
      e.claim.clear();
      e.ready_at = absl::InfiniteFuture();
    }
  }
  waiting_ = std::move(kept);
  return started;
}

}  // namespace topogang
