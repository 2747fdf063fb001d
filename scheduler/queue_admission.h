// The daemon's admission: the simulator's gang queue (scheduler/queue_policy.h) in front of the
// planner. Gangs start in (priority, arrival) order with backfill, and once a large gang has
// waited past the starvation threshold the GPUs it needs in its best domain are held for it as
// they free up, so a stream of small gangs cannot starve it. kube-scheduler retries
// unschedulable pods on its own; each retry of any gang's filter re-runs the queue. Gangs whose
// pods stop asking (deleted, or handled by another scheduler) leave the queue after
// `stale_after`.
//
// A gang's arrival is the first time it asked, or earlier when the daemon saw one of its pods
// waiting before kube-scheduler asked about it (Admit's waiting_since: kube-scheduler retries
// pods in its own order, older ones after longer backoffs), kept until every pod of it is
// gone (Forget). A
// gang that enters the queue again (its reservation dropped for a re-plan or an expiry, its
// entry gone stale, a new leader seeded with the old one's record) keeps its place in line, the
// time it has been starved and the wait its required tier has done; from a seed, also its
// patience so far.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/admission.h"

namespace topogang {

class QueueAdmission : public Admission {
 public:
  explicit QueueAdmission(QueueOptions options = {}, absl::Duration stale_after = absl::Minutes(6))
      : stale_after_(stale_after), queue_(options) {}

  absl::StatusOr<const GangRecord*> Admit(
      GangScheduler& sched, const GangSpec& gang, absl::Time now,
      const GangQueue::NodeExclusion& exclude, const GangQueue::NodeExclusion& hold_exclude = {},
      absl::Time waiting_since = absl::InfiniteFuture()) override;
  void Forget(GangScheduler& sched, const std::string& gang) override;
  void Pass(GangScheduler& sched, absl::Time now, const GangQueue::NodeExclusion& exclude,
            const GangQueue::NodeExclusion& hold_exclude) override;
  std::vector<std::string> TakeStarted() override;
  std::string WaitsBehind(const std::string& gang) const override {
    const GangQueue::Entry* e = queue_.Find(gang);
    return e ? e->waits_behind : "";
  }
  bool LargeGangsOverload(absl::Time now) const override { return queue_.LargeGangsOverload(now); }
  GangSpec Effective(const GangScheduler& sched, const GangSpec& gang, absl::Time now) override;
  std::map<std::string, QueueSeniority> Arrivals(absl::Time now) const override;
  void Seed(const std::map<std::string, QueueSeniority>& arrivals, absl::Time now) override;
  absl::Time LargeOverloadSeen() const override { return queue_.large_overload_seen(); }
  void SeedLargeOverload(absl::Time seen, absl::Time now) override {
    queue_.SeedLargeOverload(seen, now);
  }

  Waiting Queued(absl::Time now) const override;

  const GangQueue& queue() const { return queue_; }

 private:
  struct Arrival {
    absl::Time at;          // first asked (or as an earlier leader recorded it)
    absl::Time last_asked;  // last Admit (for a seed: when it was seeded)
    bool seeded = false;    // from Seed, and the gang has not asked this leader yet
    // Patience starts from Seed, given to the gang's queue entry once it enters the queue.
    absl::Time could_start = absl::InfiniteFuture();
    absl::Time thin_since = absl::InfiniteFuture();
  };
  // The gang's arrival: no later than `since`, recorded if it has none (then true: its first
  // request). `now` is when it asks.
  std::pair<absl::Time, bool> ArrivalOf(const std::string& gang, absl::Time since, absl::Time now);
  // At most every kExpiryPeriod: drops seeds not confirmed within stale_after_ (the gang's pods
  // are gone or never ask), and arrivals of gangs that have not asked for kForgetAfter (Forget
  // missed: pods deleted while nobody watched).
  void ExpireArrivals(absl::Time now);
  // Takes gangs that have not asked for stale_after_ out of the queue.
  void DropStale(GangScheduler& sched, absl::Time now);
  // Runs the queue, noting what it started (bounded: a caller that never takes them loses the
  // oldest, not memory).
  void Schedule(GangScheduler& sched, absl::Time now, const GangQueue::NodeExclusion& exclude,
                const GangQueue::NodeExclusion& hold_exclude);
  static constexpr absl::Duration kForgetAfter = absl::Hours(24 * 8);
  static constexpr absl::Duration kExpiryPeriod = absl::Seconds(30);

  absl::Duration stale_after_;
  GangQueue queue_;
  std::map<std::string, absl::Time> last_seen_;  // queued gangs: their last filter
  // Gangs that had to wait (or were seeded); a gang started at its first request is not kept.
  std::map<std::string, Arrival> arrived_;
  absl::Time expired_at_ = absl::InfinitePast();
  std::vector<std::string> started_;  // since the last TakeStarted
  static constexpr size_t kMaxStarted = 100000;
};

}  // namespace topogang
