// The step between "a gang asks for GPUs" and "its GPUs are reserved". Direct admission reserves
// whenever the gang fits now; a queue policy (scheduler/queue_policy.h) can instead hold GPUs for
// large gangs that have waited too long, so a stream of small gangs cannot starve them. The
// service only talks to this interface, so the policy can be swapped without touching the verbs.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/queue_policy.h"
#include "scheduler/tier_lapse.h"

namespace topogang {

class Admission {
 public:
  virtual ~Admission() = default;
  // Called under the DaemonState lock. Reserves every GPU of the gang or nothing; the error says
  // why it cannot start now. `exclude` names, for any gang, the nodes it must not be planned on
  // (a queue may start other waiting gangs during this call: each keeps its own constraints);
  // `hold_exclude` the nodes GPUs held for it must not be on (GangQueue::Schedule).
  virtual absl::StatusOr<const GangRecord*> Admit(
      GangScheduler& sched, const GangSpec& gang, absl::Time now,
      const GangQueue::NodeExclusion& exclude = {},
      const GangQueue::NodeExclusion& hold_exclude = {}) = 0;
  // Every pod of the gang is gone: it leaves the queue at once (and any hold for it goes).
  virtual void Forget(GangScheduler& /*sched*/, const std::string& /*gang*/) {}
  // The spec to plan `gang` with outside Admit (preemption, an elastic start), so those see a
  // required tier that has lapsed for it (scheduler/tier_lapse.h) as the queue does.
  virtual GangSpec Effective(const GangScheduler& /*sched*/, const GangSpec& gang,
                             absl::Time /*now*/) {
    return gang;
  }
};

class DirectAdmission : public Admission {
 public:
  absl::StatusOr<const GangRecord*> Admit(GangScheduler& sched, const GangSpec& gang,
                                          absl::Time now, const GangQueue::NodeExclusion& exclude,
                                          const GangQueue::NodeExclusion& = {}) override {
    const std::vector<int> masked = exclude ? sched.MaskNodes(exclude(gang)) : std::vector<int>{};
    auto r = sched.Reserve(gang, now);
    sched.UnmaskNodes(masked);
    return r;
  }
};

// The simulator's queue policy in front of the daemon (scheduler/queue_policy.h): gangs start in
// (priority, arrival) order with backfill, and once a large gang has waited past the starvation
// threshold the GPUs it needs in its best domain are held for it as they free up, so a stream of
// small gangs cannot starve it. kube-scheduler retries unschedulable pods on its own; each retry
// of any gang's filter re-runs the queue. Gangs whose pods stop asking (deleted, or handled by
// another scheduler) are dropped from the queue after `stale_after`.
class QueueAdmission : public Admission {
 public:
  explicit QueueAdmission(QueueOptions options = {}, absl::Duration stale_after = absl::Minutes(6))
      : stale_after_(stale_after), queue_(options) {}

  absl::StatusOr<const GangRecord*> Admit(
      GangScheduler& sched, const GangSpec& gang, absl::Time now,
      const GangQueue::NodeExclusion& exclude,
      const GangQueue::NodeExclusion& hold_exclude = {}) override {
    last_seen_[gang.name] = now;
    for (auto it = last_seen_.begin(); it != last_seen_.end();) {
      if (now - it->second > stale_after_) {
        queue_.Remove(sched, it->first);
        it = last_seen_.erase(it);
      } else {
        ++it;
      }
    }
    // Started earlier by the queue on behalf of an earlier filter of this gang.
    if (const GangRecord* r = sched.Find(gang.name); r && r->state == GangState::kReserved) {
      last_seen_.erase(gang.name);
      return r;
    }
    if (!queue_.Contains(gang.name)) {
      if (absl::Status s = queue_.Enqueue(WithWaitLeft(gang, now), now); !s.ok()) return s;
    }
    queue_.Schedule(sched, now, exclude, hold_exclude);
    if (const GangRecord* r = sched.Find(gang.name); r && r->state == GangState::kReserved) {
      last_seen_.erase(gang.name);
      return r;
    }
    const std::vector<int> masked = exclude ? sched.MaskNodes(exclude(gang)) : std::vector<int>{};
    auto dry = sched.DryRun(gang);
    sched.UnmaskNodes(masked);
    if (!dry.ok()) {
      if (dry.status().code() != absl::StatusCode::kResourceExhausted) {
        queue_.Remove(sched, gang.name);  // it can never start: say why, do not keep it queued
        last_seen_.erase(gang.name);
      }
      return dry.status();
    }
    if (const GangQueue::Entry* e = queue_.Find(gang.name); e && !e->declined.empty()) {
      return absl::ResourceExhaustedError(e->declined);
    }
    return absl::ResourceExhaustedError(
        absl::StrCat("waiting in the gang queue behind earlier or higher-priority gangs (",
                     queue_.size(), " waiting)"));
  }
  void Forget(GangScheduler& sched, const std::string& gang) override {
    queue_.Remove(sched, gang);
    last_seen_.erase(gang);
    first_asked_.erase(gang);
  }
  GangSpec Effective(const GangScheduler& sched, const GangSpec& gang, absl::Time now) override {
    auto it = first_asked_.find(gang.name);
    if (it == first_asked_.end() || !TierLapsed(sched.cluster(), gang, now - it->second)) {
      return gang;
    }
    return LapseRequiredTier(sched.cluster(), gang);
  }
  const GangQueue& queue() const { return queue_; }

 private:
  // A gang whose required tier lapses waits for it from the first time it asked, not from each
  // time it enters the queue: a reservation dropped for a re-plan (a member offered other
  // nodes, an expiry, a lost node, a new node set) or a queue entry gone stale comes back with
  // the wait it has left. Only such gangs are remembered, until every pod is gone (Forget) or
  // a day past the longest wait a pod may ask for; after that a re-plan waits again.
  GangSpec WithWaitLeft(GangSpec gang, absl::Time now) {
    if (gang.required_tier.empty() || gang.required_tier_max_wait == absl::InfiniteDuration()) {
      return gang;
    }
    for (auto it = first_asked_.begin(); it != first_asked_.end();) {
      it = now - it->second > kRememberAsked ? first_asked_.erase(it) : std::next(it);
    }
    const absl::Time first = first_asked_.try_emplace(gang.name, now).first->second;
    gang.required_tier_max_wait =
        std::max(absl::ZeroDuration(), gang.required_tier_max_wait - (now - first));
    return gang;
  }
  static constexpr absl::Duration kRememberAsked = absl::Hours(24 * 8);

  absl::Duration stale_after_;
  GangQueue queue_;
  std::map<std::string, absl::Time> last_seen_;
  std::map<std::string, absl::Time> first_asked_;  // gangs whose required tier may lapse
};

}  // namespace topogang
