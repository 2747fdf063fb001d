#include "tests/kubesched/scheduling_queue.h"

#include <utility>

namespace topogang::kubesched {

const char* QueueNameString(QueueName q) {
  switch (q) {
    case QueueName::kNone:
      return "none";
    case QueueName::kActive:
      return "activeQ";
    case QueueName::kBackoff:
      return "backoffQ";
    case QueueName::kUnschedulable:
      return "unschedulablePods";
    case QueueName::kInFlight:
      return "in-flight";
  }
  return "?";
}

namespace {

// isPodUpdated: anything but status and bookkeeping metadata changed.
bool SpecChanged(const Pod& a, const Pod& b) {
  auto strip = [](Json j) {
    j.erase("status");
    if (j.contains("metadata") && j["metadata"].is_object()) {
      for (const char* k : {"resourceVersion", "generation", "managedFields", "finalizers"}) {
        j["metadata"].erase(k);
      }
    }
    return j;
  };
  return strip(a.object) != strip(b.object);
}

}  // namespace

SchedulingQueue::SchedulingQueue(const Clock* clock, QueueOptions options)
    : clock_(clock), options_(options) {}

absl::Duration SchedulingQueue::BackoffDuration(int attempts) const {
  if (attempts == 0) return absl::ZeroDuration();
  absl::Duration d = options_.pod_initial_backoff;
  for (int i = 1; i < attempts; ++i) {
    if (d > options_.pod_max_backoff - d) return options_.pod_max_backoff;
    d += d;
  }
  return d;
}

absl::Time SchedulingQueue::BackoffExpiry(const QueuedPodInfo& info) const {
  if (info.attempts == 0) return absl::InfinitePast();
  absl::Time t = info.timestamp + BackoffDuration(info.attempts);
  if (options_.pop_from_backoff_q) {
    t = absl::FromUnixSeconds(absl::ToUnixSeconds(t));  // truncate to the ordering window
  }
  return t;
}

bool SchedulingQueue::IsBackingOffLocked(const QueuedPodInfo& info) const {
  const absl::Time expiry = BackoffExpiry(info);
  const absl::Time now = clock_->Now();
  if (options_.pop_from_backoff_q) {
    // Still backing off while the expiry is in the current (or a later) one-second window.
    return !(expiry < absl::FromUnixSeconds(absl::ToUnixSeconds(now)));
  }
  return expiry > now;
}

void SchedulingQueue::MoveToActiveLocked(QueuedPodInfo info) {
  const std::string key = info.pod->key();
  EraseLocked(key);
  if (!info.initial_attempt) info.initial_attempt = clock_->Now();
  ActiveKey k{-static_cast<int64_t>(info.pod->priority), info.timestamp, ++seq_};
  active_index_[key] = k;
  active_.emplace(k, std::move(info));
  cv_.notify_all();
}

void SchedulingQueue::MoveToBackoffLocked(QueuedPodInfo info) {
  const std::string key = info.pod->key();
  EraseLocked(key);
  // With SchedulerPopFromBackoffQ pods of one window are ordered as activeQ would order them.
  const int64_t prio = options_.pop_from_backoff_q ? -static_cast<int64_t>(info.pod->priority) : 0;
  BackoffKey k{BackoffExpiry(info), prio, info.timestamp, ++seq_};
  backoff_index_[key] = k;
  backoff_.emplace(k, std::move(info));
  if (options_.pop_from_backoff_q) cv_.notify_all();
}

bool SchedulingQueue::EraseLocked(const std::string& key) {
  bool erased = false;
  if (auto it = active_index_.find(key); it != active_index_.end()) {
    active_.erase(it->second);
    active_index_.erase(it);
    erased = true;
  }
  if (auto it = backoff_index_.find(key); it != backoff_index_.end()) {
    backoff_.erase(it->second);
    backoff_index_.erase(it);
    erased = true;
  }
  erased |= unschedulable_.erase(key) > 0;
  return erased;
}

QueuedPodInfo* SchedulingQueue::FindQueuedLocked(const std::string& key) {
  if (auto it = active_index_.find(key); it != active_index_.end()) return &active_[it->second];
  if (auto it = backoff_index_.find(key); it != backoff_index_.end()) {
    return &backoff_[it->second];
  }
  if (auto it = unschedulable_.find(key); it != unschedulable_.end()) return &it->second;
  return nullptr;
}

QueueName SchedulingQueue::RequeueLocked(QueuedPodInfo info, QueueingStrategy strategy) {
  if (strategy == QueueingStrategy::kSkip) {
    const std::string key = info.pod->key();
    unschedulable_[key] = std::move(info);
    return QueueName::kUnschedulable;
  }
  if (strategy == QueueingStrategy::kAfterBackoff && IsBackingOffLocked(info)) {
    MoveToBackoffLocked(std::move(info));
    return QueueName::kBackoff;
  }
  MoveToActiveLocked(std::move(info));
  return QueueName::kActive;
}

void SchedulingQueue::Add(PodPtr pod) {
  std::lock_guard<std::mutex> lock(mu_);
  QueuedPodInfo info;
  info.pod = std::move(pod);
  info.timestamp = clock_->Now();
  MoveToActiveLocked(std::move(info));
}

void SchedulingQueue::Update(PodPtr old_pod, PodPtr new_pod) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = new_pod->key();
  std::vector<ClusterEvent> events;
  if (options_.queueing_hints) {
    events = PodUpdateEvents(old_pod, new_pod, /*assigned=*/false);
    if (auto it = in_flight_pods_.find(new_pod->uid); it != in_flight_pods_.end()) {
      for (ClusterEvent& e : events) in_flight_events_.push_back({"", std::move(e)});
      return;
    }
  }
  if (active_index_.count(key) || backoff_index_.count(key)) {
    QueuedPodInfo* info = FindQueuedLocked(key);
    QueuedPodInfo copy = *info;
    copy.pod = new_pod;
    const bool in_active = active_index_.count(key) > 0;
    EraseLocked(key);
    if (in_active) {
      MoveToActiveLocked(std::move(copy));
    } else {
      MoveToBackoffLocked(std::move(copy));
    }
    return;
  }
  if (auto it = unschedulable_.find(key); it != unschedulable_.end()) {
    it->second.pod = new_pod;
    if (options_.queueing_hints) {
      for (const ClusterEvent& e : events) {
        QueueingStrategy s =
            IsPodWorthRequeuing(*new_pod, it->second.unschedulable_plugins, e, true);
        if (s == QueueingStrategy::kSkip) continue;
        QueuedPodInfo info = std::move(it->second);
        unschedulable_.erase(it);
        RequeueLocked(std::move(info), s);
        break;
      }
      return;
    }
    if (SpecChanged(*old_pod, *new_pod)) {
      QueuedPodInfo info = std::move(it->second);
      unschedulable_.erase(it);
      if (IsBackingOffLocked(info)) {
        MoveToBackoffLocked(std::move(info));
      } else {
        MoveToActiveLocked(std::move(info));
      }
    }
    return;
  }
  QueuedPodInfo info;
  info.pod = std::move(new_pod);
  info.timestamp = clock_->Now();
  MoveToActiveLocked(std::move(info));
}

void SchedulingQueue::Delete(const Pod& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  EraseLocked(pod.key());
}

std::optional<QueuedPodInfo> SchedulingQueue::Pop() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    return closed_ || !active_.empty() || (options_.pop_from_backoff_q && !backoff_.empty());
  });
  if (closed_) return std::nullopt;
  QueuedPodInfo info;
  if (!active_.empty()) {
    auto it = active_.begin();
    info = std::move(it->second);
    active_index_.erase(info.pod->key());
    active_.erase(it);
  } else {
    auto it = backoff_.begin();
    info = std::move(it->second);
    backoff_index_.erase(info.pod->key());
    backoff_.erase(it);
  }
  ++info.attempts;
  ++scheduling_cycle_;
  info.unschedulable_plugins.clear();  // reset for the next attempt, as activeQueue.pop does
  if (options_.queueing_hints && !in_flight_pods_.count(info.pod->uid)) {
    in_flight_events_.push_back({info.pod->uid, {}});
    in_flight_pods_[info.pod->uid] = std::prev(in_flight_events_.end());
  }
  in_flight_keys_[info.pod->key()] = info.pod->uid;
  return info;
}

void SchedulingQueue::DoneLocked(const std::string& uid) {
  for (auto it = in_flight_keys_.begin(); it != in_flight_keys_.end(); ++it) {
    if (it->second == uid) {
      in_flight_keys_.erase(it);
      break;
    }
  }
  auto it = in_flight_pods_.find(uid);
  if (it == in_flight_pods_.end()) return;
  in_flight_events_.erase(it->second);
  in_flight_pods_.erase(it);
  // Events older than every remaining in-flight pod are of no use to anyone.
  while (!in_flight_events_.empty() && in_flight_events_.front().pod_uid.empty()) {
    in_flight_events_.pop_front();
  }
}

void SchedulingQueue::Done(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  DoneLocked(uid);
}

QueueingStrategy SchedulingQueue::HintForInFlightPodLocked(const QueuedPodInfo& info) const {
  if (info.unschedulable_plugins.empty()) return QueueingStrategy::kAfterBackoff;
  auto it = in_flight_pods_.find(info.pod->uid);
  if (it == in_flight_pods_.end()) return QueueingStrategy::kAfterBackoff;  // no record: retry
  for (auto e = std::next(it->second); e != in_flight_events_.end(); ++e) {
    if (!e->pod_uid.empty()) continue;
    if (IsPodWorthRequeuing(*info.pod, info.unschedulable_plugins, e->event, true) !=
        QueueingStrategy::kSkip) {
      return QueueingStrategy::kAfterBackoff;
    }
  }
  return QueueingStrategy::kSkip;
}

QueueName SchedulingQueue::AddUnschedulableIfNotPresent(QueuedPodInfo info,
                                                        int64_t scheduling_cycle) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string uid = info.pod->uid;
  const std::string key = info.pod->key();
  if (FindQueuedLocked(key)) {
    DoneLocked(uid);
    return QueueName::kNone;
  }
  if (info.unschedulable_plugins.empty()) {
    ++info.consecutive_errors;  // came back because of an error, not a rejection
  } else {
    ++info.unschedulable_count;
    info.consecutive_errors = 0;
  }
  info.timestamp = clock_->Now();
  QueueName where;
  if (!options_.queueing_hints) {
    if (move_request_cycle_ >= scheduling_cycle || info.unschedulable_plugins.empty()) {
      MoveToBackoffLocked(std::move(info));
      where = QueueName::kBackoff;
    } else {
      unschedulable_[key] = std::move(info);
      where = QueueName::kUnschedulable;
    }
  } else {
    QueueingStrategy s = HintForInFlightPodLocked(info);
    where = RequeueLocked(std::move(info), s);
  }
  DoneLocked(uid);
  return where;
}

void SchedulingQueue::MovePodsLocked(std::vector<QueuedPodInfo> pods, const ClusterEvent& event) {
  for (QueuedPodInfo& info : pods) {
    QueueingStrategy s =
        IsPodWorthRequeuing(*info.pod, info.unschedulable_plugins, event, options_.queueing_hints);
    if (s == QueueingStrategy::kSkip) continue;
    unschedulable_.erase(info.pod->key());
    RequeueLocked(std::move(info), s);
  }
  move_request_cycle_ = scheduling_cycle_;
  if (options_.queueing_hints && !in_flight_pods_.empty()) {
    in_flight_events_.push_back({"", event});
  }
}

void SchedulingQueue::MoveAllToActiveOrBackoffQueue(
    const ClusterEvent& event, const std::function<bool(const Pod&)>& precheck) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<QueuedPodInfo> pods;
  for (const auto& [key, info] : unschedulable_) {
    if (!precheck || precheck(*info.pod)) pods.push_back(info);
  }
  MovePodsLocked(std::move(pods), event);
}

void SchedulingQueue::FlushBackoffQCompleted() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!backoff_.empty()) {
    auto it = backoff_.begin();
    if (IsBackingOffLocked(it->second)) break;
    QueuedPodInfo info = std::move(it->second);
    backoff_index_.erase(info.pod->key());
    backoff_.erase(it);
    MoveToActiveLocked(std::move(info));
  }
}

void SchedulingQueue::FlushUnschedulablePodsLeftover() {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_->Now();
  std::vector<QueuedPodInfo> pods;
  for (const auto& [key, info] : unschedulable_) {
    if (now - info.timestamp > options_.pod_max_in_unschedulable) pods.push_back(info);
  }
  if (!pods.empty()) MovePodsLocked(std::move(pods), UnschedulableTimeoutEvent());
}

int64_t SchedulingQueue::SchedulingCycle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduling_cycle_;
}

void SchedulingQueue::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

QueueName SchedulingQueue::Where(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (active_index_.count(key)) return QueueName::kActive;
  if (backoff_index_.count(key)) return QueueName::kBackoff;
  if (unschedulable_.count(key)) return QueueName::kUnschedulable;
  if (in_flight_keys_.count(key)) return QueueName::kInFlight;
  return QueueName::kNone;
}

std::optional<QueuedPodInfo> SchedulingQueue::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = active_index_.find(key); it != active_index_.end()) {
    return active_.at(it->second);
  }
  if (auto it = backoff_index_.find(key); it != backoff_index_.end()) {
    return backoff_.at(it->second);
  }
  if (auto it = unschedulable_.find(key); it != unschedulable_.end()) return it->second;
  return std::nullopt;
}

size_t SchedulingQueue::Size(QueueName q) const {
  std::lock_guard<std::mutex> lock(mu_);
  switch (q) {
    case QueueName::kActive:
      return active_.size();
    case QueueName::kBackoff:
      return backoff_.size();
    case QueueName::kUnschedulable:
      return unschedulable_.size();
    case QueueName::kInFlight:
      return in_flight_keys_.size();
    case QueueName::kNone:
      return 0;
  }
  return 0;
}

}  // namespace topogang::kubesched
