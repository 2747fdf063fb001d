#include "scheduler/queue_policy.h"

#include <algorithm>
#include <cmath>
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

bool GangQueue::LargeGangsOverload(absl::Time now) const {
  return !options_.LargeOverloadSwitch() || large_overload_last_pass_ ||
         now - large_overload_seen_ < options_.large_in_order_overload_memory;
}

absl::Time GangQueue::large_overload_seen() const {
  const absl::Duration memory = options_.large_in_order_overload_memory;
  if (!options_.LargeOverloadSwitch() || memory <= absl::ZeroDuration() ||
      large_overload_seen_ == absl::InfinitePast()) {
    return absl::InfinitePast();
  }
  const absl::Duration step = std::max(absl::Minutes(1), memory / 100);
  return absl::UnixEpoch() + absl::Floor(large_overload_seen_ - absl::UnixEpoch(), step);
}

void GangQueue::SeedLargeOverload(absl::Time seen, absl::Time now) {
  if (!options_.LargeOverloadSwitch()) return;
  large_overload_seen_ = std::max(large_overload_seen_, std::min(seen, now));
}

bool GangQueue::Contains(absl::string_view name) const { return Find(name) != nullptr; }

void GangQueue::SeedPatience(absl::string_view name, absl::Time could_start,
                             absl::Time thin_since) {
  for (Entry& e : waiting_) {
    if (e.spec.name != name) continue;
    e.could_start = std::min(e.could_start, could_start);
    e.thin_since = std::min(e.thin_since, thin_since);
  }
}

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

absl::StatusOr<const GangRecord*> GangQueue::ReserveOffClaim(GangScheduler& sched,
                                                             const GangSpec& gang,
                                                             const std::vector<int>& claim,
                                                             absl::Time now) {
  const std::vector<int> hidden = sched.MaskNodes(claim);
  absl::StatusOr<const GangRecord*> r = sched.Reserve(gang, now);
  sched.UnmaskNodes(hidden);
  if (r.ok() && ((*r)->placement.bandwidth_gbps < BestBandwidth(sched.cluster(), gang) ||
                 (*r)->placement.thin_level >= 0)) {
    (void)sched.Release(gang.name);  // worse than it may get on the claim: plan it with it
    return absl::ResourceExhaustedError("no placement as good off the claim");
  }
  return r;
}

std::vector<std::string> GangQueue::Schedule(GangScheduler& sched, absl::Time now,
                                             const NodeExclusion& exclude,
                                             const NodeExclusion& hold_exclude) {
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
  // As of the passes before this one: gangs that arrived since and start now are no backlog.
  const bool large_overload = LargeGangsOverload(now);
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
  std::vector<int> clear;       // the claim kept clear (QueueOptions::keep_claim_clear)
  // large_gangs_in_order: the starved large gang the others wait behind, and its place.
  std::string stopped_by;
  int stopped_priority = 0;
  absl::Time stopped_enqueued;
  int stop_min_gpus = 0;  // the gangs behind it of at least this many GPUs wait
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
    const bool large = e.spec.total_gpus() >= options_.hold_min_gpus;
    // Behind it in queue order, not merely later in this pass (QueueOrder::kSmallestFirst
    // tries smaller gangs first, whatever their age).
    const bool stopped = !stopped_by.empty() && e.spec.total_gpus() >= stop_min_gpus &&
                         (e.spec.priority < stopped_priority || e.enqueued > stopped_enqueued);
    e.waits_behind = stopped ? stopped_by : std::string();
    if (stopped) {
      r = absl::ResourceExhaustedError(absl::StrCat(
          "waiting behind gang '", stopped_by, "', a gang of ", options_.hold_min_gpus,
          "+ GPUs ahead of it in the queue (older, or of higher priority) that cannot start yet: "
          "gangs of ",
          stop_min_gpus, "+ GPUs start in queue order behind it"));
    } else if (!known_no_room) {
      const std::vector<int> masked =
          exclude ? sched.MaskNodes(exclude(e.spec)) : std::vector<int>{};
      if (!clear.empty()) r = ReserveOffClaim(sched, e.spec, clear, now);
      if (!r.ok()) r = sched.Reserve(e.spec, now);
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
    e.declined = stopped ? std::string(r.status().message()) : std::string();
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
    if (!e.declined.empty() && !stopped) {
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
    // A stopped gang neither holds (its hold could never start it) nor stops others.
    bool starved = !stopped && now - e.enqueued >= options_.starvation_threshold && large &&
                   r.status().code() == absl::StatusCode::kResourceExhausted;
    if (starved && options_.large_gangs_in_order && stopped_by.empty()) {
      e.never_starts = !CouldStartWhenDrained(sched, e.spec, hold_exclude);
      if (!e.never_starts) {
        stopped_by = e.spec.name;
        stopped_priority = e.spec.priority;
        stopped_enqueued = e.enqueued;
        const int share_gpus = std::max(
            1,
            static_cast<int>(std::ceil(options_.large_in_order_min_share * e.spec.total_gpus())));
        stop_min_gpus = large_overload ? std::max(options_.hold_min_gpus, share_gpus)
                                       : std::min(options_.hold_min_gpus, share_gpus);
      }
    }
    bool holds = false, claimed = false;
    if (starved && static_cast<int>(holders.size()) < options_.max_holds) {
      claimed = true;
      // GPUs held on nodes the gang may never use would idle while the nodes it can use went
      // to backfill.
      const std::vector<int> masked =
          hold_exclude ? sched.MaskNodes(hold_exclude(e.spec)) : std::vector<int>{};
      holds = GrowHold(sched, e, now);
      sched.UnmaskNodes(masked);
    }
    if (claimed && options_.keep_claim_clear && clear.empty()) {
      clear = e.claim;  // GrowHold chose its claim even if the hold has not started
    }
    if (holds) {
      holders.push_back(kept.size() - 1);
    } else {
      e.hold_domain = -1;
      e.holding = false;
      e.claim.clear();
      e.ready_at = absl::InfiniteFuture();
    }
  }
  waiting_ = std::move(kept);
  if (options_.LargeOverloadSwitch()) {
    int64_t backlog = 0;  // GPUs the large gangs still waiting ask for
    for (const Entry& e : waiting_) {
      // One that could never start is no load: it would keep the cluster "overloaded" forever.
      if (e.spec.total_gpus() >= options_.hold_min_gpus && !e.never_starts) {
        backlog += e.spec.total_gpus();
      }
    }
    large_overload_last_pass_ =
        backlog > options_.large_in_order_overload_backlog * sched.cluster().num_gpus();
    if (large_overload_last_pass_) large_overload_seen_ = now;
  }
  return started;
}

}  // namespace topogang
