// kube-scheduler's PriorityQueue: activeQ, backoffQ and the unschedulable pod pool, with the
// rules that move pods between them. Written from pkg/scheduler/backend/queue/
// scheduling_queue.go, active_queue.go and backoff_queue.go (pkg/scheduler/internal/queue/ before
// v1.32):
//
// - activeQ is ordered like the PrioritySort plugin: spec.priority descending, then the time the
//   pod was (re)queued. Pop blocks until it has a pod, counts an attempt and a scheduling cycle,
//   and marks the pod in flight until Done().
// - A pod that failed goes back through AddUnschedulableIfNotPresent. With queueing hints on
//   (the default since v1.32) the events that arrived while it was in flight decide
//   (determineSchedulingHintForInFlightPod): a pod with no rejecting plugin (an error: extender
//   filter error, bind failure, API error) or one an in-flight event may help goes to backoffQ
//   (or straight to activeQ when its backoff is already over); a pod rejected by plugins with no
//   helpful event goes to the unschedulable pool. With hints off, moveRequestCycle decides
//   (addUnschedulableWithoutQueueingHint): a move request seen during or after the pod's cycle,
//   or no rejector, sends it to backoffQ.
// - Backoff is podInitialBackoff * 2^(attempts-1) capped at podMaxBackoff, counted from the time
//   the pod was last requeued. FlushBackoffQCompleted (every 1 s) moves pods whose backoff is
//   over to activeQ; FlushUnschedulablePodsLeftover (every 30 s) moves pods that have waited
//   longer than podMaxInUnschedulablePodsDuration (5 min).
// - Cluster events (MoveAllToActiveOrBackoffQueue) move unschedulable pods whose rejectors'
//   queueing hints say the event may help; the event is also recorded for in-flight pods.
// - pop_from_backoff_q models SchedulerPopFromBackoffQ (beta, on by default from v1.33): backoff
//   expiry is truncated to whole seconds, and Pop takes the head of backoffQ when activeQ is
//   empty, skipping the rest of its backoff.
//
// Pods are keyed by namespace/name, in-flight pods by UID, as in kube-scheduler. The caller
// (the emulator's scheduling loop and event handlers) does the periodic flushing, so a test can
// drive the queue with a FakeClock and no threads.
//
// Thread-safety: every method is thread-safe; Pop blocks until a pod is ready or Close().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/time/time.h"
#include "tests/kubesched/api_objects.h"
#include "tests/kubesched/clock.h"
#include "tests/kubesched/queueing_hints.h"

namespace topogang::kubesched {

// framework.QueuedPodInfo.
struct QueuedPodInfo {
  PodPtr pod;
  absl::Time timestamp;  // when the pod was last added or requeued
  std::optional<absl::Time> initial_attempt;
  int attempts = 0;                             // scheduling attempts so far (Pops)
  int unschedulable_count = 0;                  // failures with a rejecting plugin
  int consecutive_errors = 0;                   // failures without one (errors)
  std::set<std::string> unschedulable_plugins;  // the rejectors of the last attempt
};

struct QueueOptions {
  absl::Duration pod_initial_backoff = absl::Seconds(1);  // podInitialBackoffSeconds
  absl::Duration pod_max_backoff = absl::Seconds(10);     // podMaxBackoffSeconds
  absl::Duration pod_max_in_unschedulable = absl::Minutes(5);
  bool queueing_hints = true;       // SchedulerQueueingHints
  bool pop_from_backoff_q = false;  // SchedulerPopFromBackoffQ
};

enum class QueueName { kNone, kActive, kBackoff, kUnschedulable, kInFlight };
const char* QueueNameString(QueueName q);

class SchedulingQueue {
 public:
  SchedulingQueue(const Clock* clock, QueueOptions options);

  // A new unscheduled pod (informer add): straight to activeQ.
  void Add(PodPtr pod);
  // An unscheduled pod changed (informer update). In flight: the change is recorded as an
  // in-flight event. In activeQ/backoffQ: replaced in place. Unschedulable: requeued if the
  // change may help (hints) or if the spec changed (no hints). Elsewhere: added to activeQ.
  void Update(PodPtr old_pod, PodPtr new_pod);
  // The pod was deleted or bound by someone: it leaves whichever queue holds it.
  void Delete(const Pod& pod);

  // Blocks until a pod can be popped; nullopt once closed.
  std::optional<QueuedPodInfo> Pop();
  // The pod's scheduling attempt is over (kube-scheduler calls this before binding, or from
  // AddUnschedulableIfNotPresent).
  void Done(const std::string& uid);
  // Requeues a pod whose attempt failed (see the file comment). Returns where it went; kNone
  // when it was already queued (kube-scheduler logs an error and drops it).
  QueueName AddUnschedulableIfNotPresent(QueuedPodInfo info, int64_t scheduling_cycle);

  // Moves unschedulable pods that `precheck` (when set) accepts and that the event may help.
  void MoveAllToActiveOrBackoffQueue(const ClusterEvent& event,
                                     const std::function<bool(const Pod&)>& precheck = nullptr);
  void FlushBackoffQCompleted();
  void FlushUnschedulablePodsLeftover();

  int64_t SchedulingCycle() const;
  // Wakes Pop for good.
  void Close();

  // --- inspection ---
  QueueName Where(const std::string& pod_key) const;
  std::optional<QueuedPodInfo> Get(const std::string& pod_key) const;
  size_t Size(QueueName q) const;
  // podInitialBackoff * 2^(attempts-1), capped (0 for 0 attempts).
  absl::Duration BackoffDuration(int attempts) const;
  // When the pod's backoff ends (timestamp + BackoffDuration, truncated to the second with
  // pop_from_backoff_q).
  absl::Time BackoffExpiry(const QueuedPodInfo& info) const;
  const QueueOptions& options() const { return options_; }

 private:
  using ActiveKey = std::tuple<int64_t, absl::Time, uint64_t>;  // -priority, timestamp, seq
  using BackoffKey = std::tuple<absl::Time, int64_t, absl::Time, uint64_t>;
  struct InFlightEntry {
    std::string pod_uid;  // set for a pod marker
    ClusterEvent event;   // otherwise an event
  };

  bool IsBackingOffLocked(const QueuedPodInfo& info) const;
  void MoveToActiveLocked(QueuedPodInfo info);
  void MoveToBackoffLocked(QueuedPodInfo info);
  QueueName RequeueLocked(QueuedPodInfo info, QueueingStrategy strategy);
  void MovePodsLocked(std::vector<QueuedPodInfo> pods, const ClusterEvent& event);
  QueueingStrategy HintForInFlightPodLocked(const QueuedPodInfo& info) const;
  void DoneLocked(const std::string& uid);
  bool EraseLocked(const std::string& key);
  QueuedPodInfo* FindQueuedLocked(const std::string& key);

  const Clock* clock_;
  const QueueOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  uint64_t seq_ = 0;
  int64_t scheduling_cycle_ = 0;
  int64_t move_request_cycle_ = -1;

  std::map<ActiveKey, QueuedPodInfo> active_;
  std::unordered_map<std::string, ActiveKey> active_index_;
  std::map<BackoffKey, QueuedPodInfo> backoff_;
  std::unordered_map<std::string, BackoffKey> backoff_index_;
  std::map<std::string, QueuedPodInfo> unschedulable_;
  // In-flight pods (by UID) and the events seen since the oldest of them started.
  std::list<InFlightEntry> in_flight_events_;
  std::unordered_map<std::string, std::list<InFlightEntry>::iterator> in_flight_pods_;
  std::unordered_map<std::string, std::string> in_flight_keys_;  // key -> uid (inspection)
};

}  // namespace topogang::kubesched
