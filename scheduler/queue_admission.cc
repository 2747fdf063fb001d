#include "scheduler/queue_admission.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "scheduler/tier_lapse.h"

namespace topogang {

std::pair<absl::Time, bool> QueueAdmission::ArrivalOf(const std::string& gang, absl::Time since,
                                                      absl::Time now) {
  since = std::min(since, now);  // never a future arrival
  auto [it, fresh] = arrived_.try_emplace(gang, Arrival{since, now, false});
  Arrival& a = it->second;
  if (!fresh) {
    a.at = std::min(a.at, since);
    a.last_asked = now;
    a.seeded = false;
  }
  return {a.at, fresh};
}

void QueueAdmission::ExpireArrivals(absl::Time now) {
  if (now - expired_at_ < kExpiryPeriod) return;
  expired_at_ = now;
  for (auto it = arrived_.begin(); it != arrived_.end();) {
    const absl::Duration quiet = now - it->second.last_asked;
    const bool gone = it->second.seeded ? quiet > stale_after_ : quiet > kForgetAfter;
    it = gone && !queue_.Contains(it->first) ? arrived_.erase(it) : std::next(it);
  }
}

void QueueAdmission::DropStale(GangScheduler& sched, absl::Time now) {
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    if (now - it->second > stale_after_) {
      queue_.Remove(sched, it->first);
      it = last_seen_.erase(it);
    } else {
      ++it;
    }
  }
}

void QueueAdmission::Schedule(GangScheduler& sched, absl::Time now,
                              const GangQueue::NodeExclusion& exclude,
                              const GangQueue::NodeExclusion& hold_exclude) {
  std::vector<std::string> started = queue_.Schedule(sched, now, exclude, hold_exclude);
  if (started_.size() + started.size() > kMaxStarted) started_.clear();
  started_.insert(started_.end(), std::make_move_iterator(started.begin()),
                  std::make_move_iterator(started.end()));
}

void QueueAdmission::Pass(GangScheduler& sched, absl::Time now,
                          const GangQueue::NodeExclusion& exclude,
                          const GangQueue::NodeExclusion& hold_exclude) {
  DropStale(sched, now);
  if (queue_.size() == 0) return;
  Schedule(sched, now, exclude, hold_exclude);
}

std::vector<std::string> QueueAdmission::TakeStarted() {
  std::vector<std::string> out;
  out.swap(started_);
  return out;
}

absl::StatusOr<const GangRecord*> QueueAdmission::Admit(
    GangScheduler& sched, const GangSpec& gang, absl::Time now,
    const GangQueue::NodeExclusion& exclude, const GangQueue::NodeExclusion& hold_exclude,
    absl::Time waiting_since) {
  last_seen_[gang.name] = now;
  DropStale(sched, now);
  ExpireArrivals(now);
  const auto [arrival, first_ask] = ArrivalOf(gang.name, waiting_since, now);
  // Started earlier by the queue on behalf of an earlier filter of this gang.
  if (const GangRecord* r = sched.Find(gang.name); r && r->state == GangState::kReserved) {
    last_seen_.erase(gang.name);
    Arrival& a = arrived_.at(gang.name);
    a.could_start = a.thin_since = absl::InfiniteFuture();  // it did not wait: no patience to keep
    return r;
  }
  if (!queue_.Contains(gang.name)) {
    if (absl::Status s = queue_.Enqueue(gang, arrival); !s.ok()) return s;
    Arrival& a = arrived_.at(gang.name);
    if (a.could_start != absl::InfiniteFuture() || a.thin_since != absl::InfiniteFuture()) {
      queue_.SeedPatience(gang.name, a.could_start, a.thin_since);
      a.could_start = a.thin_since = absl::InfiniteFuture();  // once: a later entry starts anew
    }
  }
  Schedule(sched, now, exclude, hold_exclude);
  if (const GangRecord* r = sched.Find(gang.name); r && r->state == GangState::kReserved) {
    last_seen_.erase(gang.name);
    // Started at its first request: it never waited, and most gangs are such, so nothing is
    // kept for it (a re-plan later queues it from then).
    if (first_ask) arrived_.erase(gang.name);
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

void QueueAdmission::Forget(GangScheduler& sched, const std::string& gang) {
  queue_.Remove(sched, gang);
  last_seen_.erase(gang);
  arrived_.erase(gang);
}

GangSpec QueueAdmission::Effective(const GangScheduler& sched, const GangSpec& gang,
                                   absl::Time now) {
  auto it = arrived_.find(gang.name);
  if (it == arrived_.end() || it->second.seeded ||
      !TierLapsed(sched.cluster(), gang, now - it->second.at)) {
    return gang;
  }
  return LapseRequiredTier(sched.cluster(), gang);
}

std::map<std::string, QueueSeniority> QueueAdmission::Arrivals(absl::Time now) const {
  std::map<std::string, QueueSeniority> out;
  for (const auto& [name, a] : arrived_) {
    if (a.seeded && now - a.last_asked <= stale_after_) {
      out[name] = QueueSeniority{a.at, a.could_start, a.thin_since};
    }
  }
  for (const GangQueue::Entry& e : queue_.waiting()) {
    out[e.spec.name] = QueueSeniority{e.enqueued, e.could_start, e.thin_since};
  }
  return out;
}

void QueueAdmission::Seed(const std::map<std::string, QueueSeniority>& arrivals, absl::Time now) {
  for (const auto& [name, t] : arrivals) {
    if (arrived_.contains(name)) continue;  // this leader has seen it ask: it keeps what it has
    // Never in the future; a patience not started (InfiniteFuture) stays not started.
    auto clamp = [&](absl::Time x) { return x == absl::InfiniteFuture() ? x : std::min(x, now); };
    arrived_[name] =
        Arrival{std::min(t.arrival, now), now, true, clamp(t.could_start), clamp(t.thin_since)};
  }
}

Admission::Waiting QueueAdmission::Queued(absl::Time now) const {
  Waiting w;
  for (const GangQueue::Entry& e : queue_.waiting()) {
    // From its arrival (Enqueue's time: the first request, or a seeded one), never negative.
    const absl::Duration waited = std::max(absl::ZeroDuration(), now - e.enqueued);
    if (e.spec.total_gpus() >= queue_.options().hold_min_gpus) {
      ++w.large;
      w.longest_large = std::max(w.longest_large, waited);
    } else {
      ++w.small;
      w.longest_small = std::max(w.longest_small, waited);
    }
  }
  return w;
}

}  // namespace topogang
