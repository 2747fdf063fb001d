// topogang: exactly what the daemon runs. The daemon's scheduling state (scheduler/
// gang_scheduler.h) and planner (scheduler/planner.h) behind the daemon's queue (scheduler/
// queue_policy.h GangQueue: ordered starts with backfill, GPU holds for starved large gangs):
//  - arrivals are GangQueue::Enqueue'd; GangQueue::Schedule reserves what fits; the simulator
//    commits those reservations at once (every member binds instantly here);
//  - completions Release; failures and drains go through GangScheduler::SetNodeCordoned. On a
//    failure the replacement the scheduler proposes (PlanNear: next to the survivors) is
//    applied when the gang runs at its ideal bandwidth and the repair keeps it (no slower span,
//    no new thin side, no NVLink domain left with fewer of its GPUs); otherwise (or
//    when there is none) the gang is released and requeued, keeping its place in line, so it is
//    re-planned whole instead of running slow for the rest of its life. On a drain running gangs
//    keep their GPUs until they finish.
// GPUs the queue holds for a starved gang (kHeld records) are reported as idle-held GPU-time.
// Members run in rank order (scheduler/rank_order.h): the planner returns them so, and a repaired
// gang is re-ranked when it restarts, so the network model prices the ring a launcher would build.
//
// The policies of issue #13, each off unless PolicyContext asks for it, each the core's own code:
//  - preemption: after the queue's pass, a waiting gang above the lowest running priority asks
//    PlanPreemption for whole lower-priority victims; ApplyPreemption evicts them and places it.
//  - elastic gangs: a gang with a trace min_members is queued at its minimum; once the queue
//    reserves it, ElasticGangs::Start places it again in the domain with the most room to grow,
//    and after every pass GrowthOffer/Grow add what is free inside that domain (after the queue,
//    so growth takes only what no waiting gang could use now; a gang never shrinks).
//  - hot spares: a SparePool's nodes are masked from everything but failures; a failed member
//    goes to ProposeSpareReplacement (a spare in its own domain first), under the same rule as
//    an ordinary repair. A domain that used its spare gets a new one from its next idle node.
//  - slow nodes: a trace @slow event is reported to a NodeSlowness as one slow NCCL self-test
//    of twice the threshold (its half-life set to a century, so the node stays slow until the
//    trace says it is not: then Forget), and the queue plans gangs of slow_gang_gpus+ without
//    the slow nodes (JobExclusion::ForQueue). Growth and preemption do not look at slowness.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "scheduler/elastic.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/job_exclusion.h"
#include "scheduler/node_slowness.h"
#include "scheduler/preemption.h"
#include "scheduler/queue_policy.h"
#include "scheduler/rank_order.h"
#include "scheduler/repair_quality.h"
#include "scheduler/spares.h"
#include "scheduler/tier_lapse.h"
#include "sim/comm_model.h"
#include "sim/network_model.h"
#include "sim/policies.h"

namespace topogang::sim {
namespace {

absl::Time At(double s) { return absl::UnixEpoch() + absl::Seconds(s); }

class TopogangPolicy : public Policy {
 public:
  TopogangPolicy(const Cluster& c, PolicyContext ctx)
      : ctx_(std::move(ctx)),
        sched_(c, SchedulerOptions{}),
        queue_(Options(ctx_)),
        slowness_(Persistent()),
        exclusion_(slowness_, ExclusionOptions{ctx_.slow_gang_gpus}) {
    for (size_t j = 0; j < ctx_.jobs->size(); ++j) {
      const GangSpec& g = (*ctx_.jobs)[j].gang;
      by_name_[g.name] = j;
      ideal_.push_back(IdealBandwidthGbps(c, g.members, g.gpus_per_member));
    }
    first_enqueued_.assign(ctx_.jobs->size(), -1);
    if (ctx_.spares_per_domain > 0) {
      spare_opts_.tier = ctx_.spare_tier;
      spare_opts_.per_domain = ctx_.spares_per_domain;
      RebuildSpares();  // the engine checked the tier
      spare_target_ = pool_ ? pool_->nodes().size() : 0;
    }
  }
  std::string name() const override { return "topogang"; }

  static QueueOptions Options(const PolicyContext& ctx) {
    QueueOptions o = ctx.queue_base;
    if (ctx.queue.starvation_s >= 0) o.starvation_threshold = absl::Seconds(ctx.queue.starvation_s);
    if (ctx.queue.hold_min_gpus >= 0) o.hold_min_gpus = ctx.queue.hold_min_gpus;
    if (ctx.queue.max_holds >= 0) o.max_holds = ctx.queue.max_holds;
    if (ctx.queue.claim_factor >= 1) o.claim_factor = ctx.queue.claim_factor;
    if (ctx.queue.whole_member_holds >= 0) o.whole_member_holds = ctx.queue.whole_member_holds;
    if (ctx.queue.claim_order >= 0) o.claim_order = static_cast<ClaimOrder>(ctx.queue.claim_order);
    if (ctx.queue.backfill_into_holds >= 0) o.backfill_into_holds = ctx.queue.backfill_into_holds;
    if (ctx.queue.hold_horizon_s >= 0) o.hold_horizon = absl::Seconds(ctx.queue.hold_horizon_s);
    if (ctx.queue.hold_ready_fraction >= 0) o.hold_ready_fraction = ctx.queue.hold_ready_fraction;
    if (ctx.queue.hold_max_shortfall >= 0)
      o.hold_max_shortfall_share = ctx.queue.hold_max_shortfall;
    if (ctx.queue.hold_when_backfill_blocks >= 0) {
      o.hold_when_backfill_blocks = ctx.queue.hold_when_backfill_blocks;
    }
    if (ctx.queue.order >= 0) o.order = static_cast<QueueOrder>(ctx.queue.order);
    if (ctx.queue.hold_domain_soonest >= 0) o.hold_domain_soonest = ctx.queue.hold_domain_soonest;
    if (ctx.queue.keep_claim_clear >= 0) o.keep_claim_clear = ctx.queue.keep_claim_clear;
    if (ctx.queue.large_gangs_in_order >= 0) {
      o.large_gangs_in_order = ctx.queue.large_gangs_in_order;
    }
    if (ctx.queue.large_in_order_min_share >= 0) {
      o.large_in_order_min_share = ctx.queue.large_in_order_min_share;
    }
    if (ctx.queue.large_in_order_overload_backlog >= 0) {
      o.large_in_order_overload_backlog = ctx.queue.large_in_order_overload_backlog;
    }
    if (ctx.queue.large_in_order_overload_memory_s >= 0) {
      o.large_in_order_overload_memory = absl::Seconds(ctx.queue.large_in_order_overload_memory_s);
    }
    if (ctx.queue.thin_side_patience_s >= 0) {
      o.thin_side_patience = absl::Seconds(ctx.queue.thin_side_patience_s);
    }
    if (ctx.queue.hold_timeout_s >= 0) o.hold_timeout = absl::Seconds(ctx.queue.hold_timeout_s);
    if (ctx.locality_patience_s >= 0) o.locality_patience = absl::Seconds(ctx.locality_patience_s);
    return o;
  }
  const Cluster& cluster() const override { return sched_.cluster(); }

  void Enqueue(int j, double now) override {
    // A gang requeued after a failure keeps its place in line.
    if (first_enqueued_[j] < 0) first_enqueued_[j] = now;
    (void)queue_.Enqueue(QueuedSpec(j), At(first_enqueued_[j]));
    dirty_ = true;
  }

  std::vector<Started> Schedule(double now) override {
    std::vector<Started> out;
    if (!dirty_ && now < wake_) return out;
    dirty_ = false;
    if (pool_ && spares_stale_) RebuildSpares();
    {
      // Spares take no ordinary work: hidden from the queue, preemption and growth alike.
      std::optional<SpareMask> mask;
      if (pool_) mask.emplace(sched_, *pool_);
      // Slow nodes are never right for a large gang: its hold avoids them too.
      GangQueue::NodeExclusion exclude;
      if (ctx_.avoid_slow) exclude = exclusion_.ForQueue(At(now));
      for (const std::string& name : queue_.Schedule(sched_, At(now), exclude, exclude)) {
        const int j = by_name_.at(name);
        out.push_back(Started{j, CommitStart(j, now)});
      }
      if (ctx_.preemption) Preempt(now, &out);
      if (ctx_.elastic) GrowAll(&out);
    }
    // The next time a waiting gang's patience runs out or a large gang turns "starved".
    const absl::Time next = queue_.NextDeadline(At(now));
    wake_ =
        next == absl::InfiniteFuture() ? kNever : absl::ToDoubleSeconds(next - absl::UnixEpoch());
    // The deadline is after At(now), but by less than a double's step at this time it converts
    // back to `now` itself: the run would wake at `now` forever. Ask for the next double.
    if (wake_ <= now) wake_ = std::nextafter(now, kNever);
    if (!preempted_.empty()) wake_ = now;  // the victims are requeued: try them again now
    return out;
  }

  std::vector<int> TakePreempted() override { return std::exchange(preempted_, {}); }
  std::vector<Started> TakeGrown() override { return std::exchange(grown_, {}); }

  long SpareIdleGpus() const override {
    long idle = 0;
    if (pool_) {
      for (int n : pool_->nodes()) idle += sched_.cluster().NodeFreeHealthy(n);
    }
    return idle;
  }

  void Finish(int j) override {
    (void)sched_.Release(job(j).gang.name);
    elastic_.Forget(job(j).gang.name);
    growing_.erase(j);
    dirty_ = true;
    spares_stale_ = spares_stale_ || SparesShort();
  }

  HealthResult SetNodeDown(int node, bool down, bool fail, double now) override {
    HealthResult r;
    dirty_ = true;
    std::vector<ReplanEvent> events = sched_.SetNodeCordoned(node, down, At(now));
    spares_stale_ = spares_stale_ || SparesShort();
    if (!down || !fail) return r;
    for (ReplanEvent& e : events) {
      auto it = by_name_.find(e.gang);
      if (it == by_name_.end()) continue;  // a hold: the queue rebuilds it
      const int j = it->second;
      if (pool_ && (e.kind == ReplanEvent::Kind::kReplacementProposed ||
                    e.kind == ReplanEvent::Kind::kReplacementImpossible)) {
        // The scheduler's own proposal saw the spares as ordinary nodes (of any domain): ask
        // the spare pool instead.
        auto spare = ProposeSpareReplacement(sched_, *pool_, e.gang, e.lost_members);
        e.kind = spare.ok() ? ReplanEvent::Kind::kReplacementProposed
                            : ReplanEvent::Kind::kReplacementImpossible;
        if (spare.ok()) e.replacement = *std::move(spare);
        spares_stale_ = true;
      }
      if (e.kind == ReplanEvent::Kind::kReplacementProposed && KeepsBandwidth(e) &&
          (ctx_.repair_in_place_always ||
           sched_.Find(e.gang)->placement.bandwidth_gbps >= ideal_[j]) &&
          sched_.ApplyReplacement(e.gang, e.lost_members, e.replacement).ok()) {
        // The gang restarts from its checkpoint: its launcher ranks the members anew
        // (scheduler/rank_order.h), so the replacement does not sit out of ring order.
        std::vector<MemberPlacement> members = sched_.Find(e.gang)->placement.members;
        SortByRank(&members);
        r.moved.emplace_back(j, std::move(members));
        continue;
      }
      if (e.kind == ReplanEvent::Kind::kReplacementProposed ||
          e.kind == ReplanEvent::Kind::kReplacementImpossible) {
        (void)sched_.Release(e.gang);
        elastic_.Forget(e.gang);
        growing_.erase(j);
        r.killed.push_back(j);
      }
    }
    return r;
  }

  double NextWakeup() const override { return wake_; }

  long HeldIdleGpus() const override {
    long held = 0;
    const std::string prefix = GangQueue::HoldName("");
    const auto& gangs = sched_.gangs();
    for (auto it = gangs.lower_bound(prefix);
         it != gangs.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      for (const MemberPlacement& m : it->second.placement.members) held += m.gpus.size();
    }
    return held;
  }

  void SetNodeSlow(int node, bool slow, double now) override {
    if (slow) {
      slowness_.Report(node, SlownessSignal::kSlowNcclTest, At(now),
                       2 * slowness_.options().threshold);
    } else {
      slowness_.Forget(node);
    }
    dirty_ = true;
  }

 private:
  static SlownessOptions Persistent() {
    SlownessOptions o;
    o.half_life = absl::Hours(24 * 365 * 100);
    return o;
  }
  const SimJob& job(int j) const { return (*ctx_.jobs)[j]; }
  bool IsElastic(int j) const { return ctx_.elastic && job(j).trace->elastic(); }

  // What the queue sees: an elastic gang waits for its minimum only.
  GangSpec QueuedSpec(int j) const {
    GangSpec g = job(j).gang;
    if (IsElastic(j)) g.members = job(j).trace->min_members;
    if (g.required_tier.empty() || g.required_tier_max_wait != absl::InfiniteDuration()) return g;
    const int level = cluster().LevelByName(g.required_tier);
    if (ctx_.required_tier_max_wait_s >= 0 && !IsNvlinkLevel(cluster(), level)) {
      g.required_tier_max_wait = absl::Seconds(ctx_.required_tier_max_wait_s);
      return g;
    }
    g.required_tier_max_wait =
        ClusterTierWait(cluster(), g.required_tier, ctx_.required_tier_max_wait_by_tier);
    return g;
  }

  // Commits the gang the queue (or a preemption) just reserved, and returns its members. An
  // elastic gang is placed again by ElasticGangs::Start: same size, but in the domain with the
  // most room to grow (the queue's best fit would pick the tightest).
  std::vector<MemberPlacement> CommitStart(int j, double now) {
    const std::string& name = job(j).gang.name;
    if (IsElastic(j)) {
      const GangRecord saved = *sched_.Find(name);
      (void)sched_.Release(name);
      // The record's spec, which a lapsed required tier has left as a preference.
      GangSpec spec = saved.spec;
      spec.members = job(j).gang.members;
      auto rec = elastic_.Start(sched_, spec, job(j).trace->min_members, spec.members, At(now));
      if (rec.ok()) {
        growing_.insert(j);
      } else {  // cannot happen (its minimum fitted a moment ago); keep the queue's choice
        (void)sched_.Adopt(saved.spec, saved.placement, GangState::kReserved, At(now));
      }
    }
    (void)sched_.Commit(name);
    return sched_.Find(name)->placement.members;
  }

  // Waiting gangs above the lowest priority holding GPUs, in queue order, evict whole gangs of
  // lower priority when PlanPreemption finds a set that makes room (never for a gang that would
  // still not fit; never a gang that already fits: the queue decides those).
  void Preempt(double now, std::vector<Started>* out) {
    std::vector<GangSpec> waiting;
    for (const GangQueue::Entry& e : queue_.waiting()) {
      if (e.waits_behind.empty()) waiting.push_back(e.spec);  // one stopped in order waits
    }
    int lowest = std::numeric_limits<int>::max();  // of the gangs that could be victims
    for (const auto& [name, rec] : sched_.gangs()) {
      if (rec.state != GangState::kHeld) lowest = std::min(lowest, rec.spec.priority);
    }
    for (const GangSpec& spec : waiting) {
      if (spec.priority <= lowest) continue;
      auto plan = PlanPreemption(sched_, spec);
      if (!plan.ok() || plan->victims.empty()) continue;
      const GangQueue::Entry* entry = nullptr;
      for (const GangQueue::Entry& e : queue_.waiting()) {
        if (e.spec.name == spec.name) entry = &e;
      }
      const absl::Time enqueued = entry->enqueued;
      (void)queue_.Remove(sched_, spec.name);  // frees its hold, if any: only more room
      if (!ApplyPreemption(sched_, spec, *plan, At(now)).ok()) {
        // The job's own spec: a lapsed tier lapses again at once, without patience.
        (void)queue_.Enqueue(QueuedSpec(by_name_.at(spec.name)), enqueued);
        continue;
      }
      for (const std::string& v : plan->victims) {
        const int vj = by_name_.at(v);
        elastic_.Forget(v);
        growing_.erase(vj);
        preempted_.push_back(vj);
      }
      const int j = by_name_.at(spec.name);
      out->push_back(Started{j, CommitStart(j, now)});
    }
  }

  // Offers every running elastic gang below its maximum the free room in its start domain. A gang
  // started in this same pass starts with its new members (its launcher has not formed the group
  // yet: no resize); the others resize.
  void GrowAll(std::vector<Started>* started) {
    for (int j : growing_) {
      const std::string& name = job(j).gang.name;
      auto offer = elastic_.GrowthOffer(sched_, name);
      if (!offer.ok() || offer->members.empty()) continue;
      if (!elastic_.Grow(sched_, name, offer->members).ok()) continue;
      std::vector<MemberPlacement> members = sched_.Find(name)->placement.members;
      SortByRank(&members);  // the launcher re-forms the ring over all members
      auto it = std::find_if(started->begin(), started->end(),
                             [&](const Started& s) { return s.job == j; });
      if (it != started->end()) {
        it->members = std::move(members);
      } else {
        grown_.push_back(Started{j, std::move(members)});
      }
    }
  }

  // Spares are re-picked when a domain has fewer than it should (a spare took a failed member's
  // place, or a spare went down): the domain's next idle healthy node becomes its spare.
  void RebuildSpares() {
    SpareOptions o = spare_opts_;
    if (pool_) {
      for (int n : pool_->nodes()) {
        if (sched_.cluster().NodeFreeHealthy(n) == sched_.cluster().node(n).gpus) {
          o.marked_nodes.push_back(sched_.cluster().node(n).name);
        }
      }
    }
    auto built = SparePool::Build(sched_.cluster(), o);
    if (built.ok()) pool_ = *std::move(built);
    spares_stale_ = false;
  }
  bool SparesShort() const {
    if (!pool_) return false;
    if (pool_->nodes().size() < spare_target_) return true;
    for (int n : pool_->nodes()) {
      if (sched_.cluster().NodeFreeHealthy(n) != sched_.cluster().node(n).gpus) return true;
    }
    return false;
  }

  // Whether the proposed replacement leaves the gang as well connected as it was. A repair that
  // would drag it across a slower tier for the rest of its run is worse than a restart; so is one
  // that leaves a thin side (Placement::thin_level) where there was none: a lone replacement in a
  // switch domain holding no other member paces the whole ring through that domain's share of
  // oversubscribed uplinks, at the same span (a 288-GPU NVL72 gang: 690 -> 200 GB/s).
  // A repair that would leave the gang slower than it ran (scheduler/repair_quality.h) is
  // refused, and the gang restarts re-planned whole.
  bool KeepsBandwidth(const ReplanEvent& e) const {
    const GangRecord* rec = sched_.Find(e.gang);
    if (rec == nullptr || e.replacement.size() != e.lost_members.size()) return false;
    return !AssessRepair(sched_.cluster(), rec->placement, e.lost_members, e.replacement)
                .Degraded();
  }

  PolicyContext ctx_;
  GangScheduler sched_;
  GangQueue queue_;
  std::map<std::string, int, std::less<>> by_name_;
  std::vector<double> ideal_, first_enqueued_;
  bool dirty_ = false;
  double wake_ = kNever;
  ElasticGangs elastic_;
  std::set<int> growing_;  // running elastic gangs (ordered: growth is deterministic)
  std::vector<int> preempted_;
  std::vector<Started> grown_;
  SpareOptions spare_opts_;
  std::optional<SparePool> pool_;
  size_t spare_target_ = 0;
  bool spares_stale_ = false;
  NodeSlowness slowness_;
  JobExclusion exclusion_;  // reads slowness_
};

}  // namespace

std::unique_ptr<Policy> MakeTopogangPolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<TopogangPolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
