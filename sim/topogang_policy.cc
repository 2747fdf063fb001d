// topogang: exactly what the daemon runs. The daemon's scheduling state (scheduler/
// gang_scheduler.h) and planner (scheduler/planner.h) behind the daemon's queue (scheduler/
// queue_policy.h GangQueue: ordered starts with backfill, GPU holds for starved large gangs):
//  - arrivals are GangQueue::Enqueue'd; GangQueue::Schedule reserves what fits; the simulator
//    commits those reservations at once (every member binds instantly here);
//  - completions Release; failures and drains go through GangScheduler::SetNodeCordoned. On a
//    failure the replacement the scheduler proposes (PlanNear: next to the survivors) is
//    applied when the gang runs at its ideal bandwidth and the repair keeps it; otherwise (or
//    when there is none) the gang is released and requeued, keeping its place in line, so it is
//    re-planned whole instead of running slow for the rest of its life. On a drain running gangs
//    keep their GPUs until they finish.
// GPUs the queue holds for a starved gang (kHeld records) are reported as idle-held GPU-time.
// Members run in rank order (scheduler/rank_order.h): the planner returns them so, and a repaired
// gang is re-ranked when it restarts, so the network model prices the ring a launcher would build.
#include <map>

#include "scheduler/gang_scheduler.h"
#include "scheduler/queue_policy.h"
#include "scheduler/rank_order.h"
#include "sim/comm_model.h"
#include "sim/policies.h"

namespace topogang::sim {
namespace {

absl::Time At(double s) { return absl::UnixEpoch() + absl::Seconds(s); }

class TopogangPolicy : public Policy {
 public:
  TopogangPolicy(const Cluster& c, PolicyContext ctx)
      : ctx_(std::move(ctx)), sched_(c, SchedulerOptions{}), queue_(Options(ctx_)) {
    for (size_t j = 0; j < ctx_.jobs->size(); ++j) {
      const GangSpec& g = (*ctx_.jobs)[j].gang;
      by_name_[g.name] = j;
      ideal_.push_back(IdealBandwidthGbps(c, g.members, g.gpus_per_member));
    }
    first_enqueued_.assign(ctx_.jobs->size(), -1);
  }
  std::string name() const override { return "topogang"; }

  static QueueOptions Options(const PolicyContext& ctx) {
    QueueOptions o;
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
    if (ctx.queue.hold_timeout_s >= 0) o.hold_timeout = absl::Seconds(ctx.queue.hold_timeout_s);
    if (ctx.locality_patience_s >= 0) o.locality_patience = absl::Seconds(ctx.locality_patience_s);
    return o;
  }
  const Cluster& cluster() const override { return sched_.cluster(); }

  void Enqueue(int j, double now) override {
    // A gang requeued after a failure keeps its place in line.
    if (first_enqueued_[j] < 0) first_enqueued_[j] = now;
    (void)queue_.Enqueue(job(j).gang, At(first_enqueued_[j]));
    dirty_ = true;
  }

  std::vector<Started> Schedule(double now) override {
    std::vector<Started> out;
    if (!dirty_ && now < wake_) return out;
    dirty_ = false;
    for (const std::string& name : queue_.Schedule(sched_, At(now))) {
      const int j = by_name_.at(name);
      const GangRecord* rec = sched_.Find(name);
      (void)sched_.Commit(name);
      out.push_back(Started{j, rec->placement.members});
    }
    // The next time a waiting gang's patience runs out or a large gang turns "starved".
    const absl::Time next = queue_.NextDeadline(At(now));
    wake_ =
        next == absl::InfiniteFuture() ? kNever : absl::ToDoubleSeconds(next - absl::UnixEpoch());
    return out;
  }

  void Finish(int j) override {
    (void)sched_.Release(job(j).gang.name);
    dirty_ = true;
  }

  HealthResult SetNodeDown(int node, bool down, bool fail, double now) override {
    HealthResult r;
    dirty_ = true;
    std::vector<ReplanEvent> events = sched_.SetNodeCordoned(node, down, At(now));
    if (!down || !fail) return r;
    for (const ReplanEvent& e : events) {
      auto it = by_name_.find(e.gang);
      if (it == by_name_.end()) continue;  // a hold: the queue rebuilds it
      const int j = it->second;
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

 private:
  const SimJob& job(int j) const { return (*ctx_.jobs)[j]; }

  // Whether the proposed replacement leaves the gang as well connected as it was. A repair that
  // would drag it across a slower tier for the rest of its run is worse than a restart.
  bool KeepsBandwidth(const ReplanEvent& e) const {
    const GangRecord* rec = sched_.Find(e.gang);
    if (rec == nullptr || e.replacement.size() != e.lost_members.size()) return false;
    Placement after = rec->placement;
    for (size_t i = 0; i < e.lost_members.size(); ++i) {
      after.members[e.lost_members[i]] = e.replacement[i];
    }
    SummarizePlacement(sched_.cluster(), &after);
    return after.bandwidth_gbps >= rec->placement.bandwidth_gbps;
  }

  PolicyContext ctx_;
  GangScheduler sched_;
  GangQueue queue_;
  std::map<std::string, int, std::less<>> by_name_;
  std::vector<double> ideal_, first_enqueued_;
  bool dirty_ = false;
  double wake_ = kNever;
};

}  // namespace

std::unique_ptr<Policy> MakeTopogangPolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<TopogangPolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
