// topogang: exactly what the daemon runs. The daemon's scheduling state (scheduler/
// gang_scheduler.h) and planner (scheduler/planner.h) behind the daemon's queue (scheduler/
// queue_policy.h GangQueue: ordered starts with backfill, GPU holds for starved large gangs):
//  - arrivals are GangQueue::Enqueue'd; GangQueue::Schedule reserves what fits; the simulator
//    commits those reservations at once (every member binds instantly here);
//  - completions Release; failures and drains go through GangScheduler::SetNodeCordoned. On a
//    failure the replacement the scheduler proposes (PlanNear: next to the survivors) is
//    applied; when none exists the gang is released and requeued. On a drain running gangs
//    keep their GPUs until they finish.
// GPUs the queue holds for a starved gang (kHeld records) are reported as idle-held GPU-time.
#include <map>

#include "scheduler/gang_scheduler.h"
#include "scheduler/queue_policy.h"
#include "sim/policies.h"

namespace topogang::sim {
namespace {

absl::Time At(double s) { return absl::UnixEpoch() + absl::Seconds(s); }

class TopogangPolicy : public Policy {
 public:
  TopogangPolicy(const Cluster& c, PolicyContext ctx)
      : ctx_(std::move(ctx)), sched_(c, SchedulerOptions{}), queue_(QueueOptions{}) {
    for (size_t j = 0; j < ctx_.jobs->size(); ++j) by_name_[(*ctx_.jobs)[j].gang.name] = j;
  }
  std::string name() const override { return "topogang"; }
  const Cluster& cluster() const override { return sched_.cluster(); }

  void Enqueue(int j, double now) override {
    (void)queue_.Enqueue(job(j).gang, At(now));
    dirty_ = true;
  }

  std::vector<Started> Schedule(double now) override {
    std::vector<Started> out;
    if (!dirty_ && now < wake_) return out;
    dirty_ = false;
    for (const std::string& name : queue_.Schedule(sched_, At(now))) {
      (void)sched_.Commit(name);
      const int j = by_name_.at(name);
      out.push_back(Started{j, sched_.Find(name)->placement.members});
    }
    // The next time a waiting large gang turns "starved" and may start holding GPUs.
    wake_ = kNever;
    const QueueOptions defaults;
    for (const GangQueue::Entry& e : queue_.waiting()) {
      if (e.hold_domain >= 0 || e.spec.total_gpus() < defaults.hold_min_gpus) continue;
      const double t = absl::ToDoubleSeconds(e.enqueued - absl::UnixEpoch()) +
                       absl::ToDoubleSeconds(defaults.starvation_threshold);
      if (t > now) wake_ = std::min(wake_, t);
    }
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
      if (e.kind == ReplanEvent::Kind::kReplacementProposed &&
          sched_.ApplyReplacement(e.gang, e.lost_members, e.replacement).ok()) {
        r.moved.emplace_back(j, sched_.Find(e.gang)->placement.members);
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

  PolicyContext ctx_;
  GangScheduler sched_;
  GangQueue queue_;
  std::map<std::string, int, std::less<>> by_name_;
  bool dirty_ = false;
  double wake_ = kNever;
};

}  // namespace

std::unique_ptr<Policy> MakeTopogangPolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<TopogangPolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
