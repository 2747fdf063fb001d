// topogang-easy: the daemon's planner (scheduler/planner.h via GangScheduler::DryRun) behind
// the simulator's FIFO + EASY backfill queue (gang_policy.h) instead of the daemon's GangQueue.
// Kept as the "before" of docs/placement-quality.md: same placements, different queue.
#include <map>

#include "absl/strings/str_cat.h"
#include "scheduler/gang_scheduler.h"
#include "sim/policies.h"

namespace topogang::sim {
namespace {

class TopogangEasyPolicy : public GangPolicy {
 public:
  TopogangEasyPolicy(const Cluster& c, PolicyContext ctx)
      : GangPolicy(std::move(ctx), Queueing::kBackfill), sched_(c, Options()) {}
  std::string name() const override { return "topogang-easy"; }
  const Cluster& cluster() const override { return sched_.cluster(); }

 protected:
  static SchedulerOptions Options() {
    SchedulerOptions o;
    o.auto_apply_replacements = false;  // applied per failure kind in Repair
    return o;
  }

  std::optional<std::vector<MemberPlacement>> Place(int j) override {
    auto p = sched_.DryRun(job(j).gang);
    if (!p.ok()) return std::nullopt;
    planned_[j] = *p;
    return p->members;
  }
  void Take(int j, const std::vector<MemberPlacement>& members) override {
    auto it = planned_.find(j);
    Placement p;
    if (it != planned_.end() && it->second.members.size() == members.size()) {
      p = std::move(it->second);
    } else {
      p.members = members;
    }
    if (it != planned_.end()) planned_.erase(it);
    (void)sched_.Adopt(job(j).gang, std::move(p), GangState::kRunning, now_);
  }
  void Give(int j, const std::vector<MemberPlacement>&) override {
    planned_.erase(j);
    (void)sched_.Release(job(j).gang.name);
  }
  void SetCordoned(int node, bool cordoned) override {
    events_.clear();
    for (ReplanEvent& e : sched_.SetNodeCordoned(node, cordoned, now_)) {
      events_[e.gang] = std::move(e);
    }
  }
  bool Repair(int j, int, double, std::vector<MemberPlacement>* members) override {
    auto it = events_.find(job(j).gang.name);
    if (it == events_.end() || it->second.kind != ReplanEvent::Kind::kReplacementProposed) {
      return false;
    }
    if (!sched_.ApplyReplacement(it->first, it->second.lost_members, it->second.replacement).ok()) {
      return false;
    }
    *members = sched_.Find(it->first)->placement.members;
    return true;
  }

 public:
  std::vector<Started> Schedule(double now) override {
    now_ = absl::UnixEpoch() + absl::Seconds(now);
    planned_.clear();
    return GangPolicy::Schedule(now);
  }
  HealthResult SetNodeDown(int node, bool down, bool fail, double now) override {
    now_ = absl::UnixEpoch() + absl::Seconds(now);
    return GangPolicy::SetNodeDown(node, down, fail, now);
  }

 private:
  GangScheduler sched_;
  absl::Time now_ = absl::UnixEpoch();
  std::map<int, Placement> planned_;
  std::map<std::string, ReplanEvent> events_;
};

}  // namespace

std::unique_ptr<Policy> MakeTopogangEasyPolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<TopogangEasyPolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
