// A kube-scheduler emulator for integration tests and benchmarks: it watches a Kubernetes API
// server (list + watch of nodes and pods over HTTP) and schedules the pending pods that name
// its scheduler the way kube-scheduler v1.32+ does, calling real scheduler extenders (such as
// topogangd) over HTTP with kube-scheduler's exact request bodies.
//
// One scheduling thread runs one cycle per pod (pkg/scheduler/schedule_one.go ScheduleOne):
// pop the next pod from the SchedulingQueue; run the default filters over the cache snapshot,
// searching from a rotating start index until numFeasibleNodesToFind nodes pass
// (percentageOfNodesToScore); chain the extenders' filter verbs; prioritize when more than one
// node is left (in-tree scores plus each extender's score x weight x 10, ties broken at random);
// assume the pod on the winner; then bind asynchronously (the first interested binder extender,
// else the API server's pods/binding), so a bind held by the extender never blocks the next
// cycle. Failures go back to the queue as kube-scheduler's handleSchedulingFailure and
// handleBindingCycleError do. See README.md for what is and is not modelled, with sources.
//
// Every kube-scheduler duration is virtual: time_scale 10 makes backoffs, httpTimeout and the
// flush periods ten times shorter on the wall clock. cycle_cost adds virtual time to every cycle
// (10 ms gives kube-scheduler's ~100 pods/s).
//
// Thread-safety: all public methods are thread-safe. Start/Stop are not reentrant.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tests/kubesched/api_objects.h"
#include "tests/kubesched/client_throttle.h"
#include "tests/kubesched/clock.h"
#include "tests/kubesched/extender_client.h"
#include "tests/kubesched/informer.h"
#include "tests/kubesched/pod_condition.h"
#include "tests/kubesched/scheduler_cache.h"
#include "tests/kubesched/scheduling_queue.h"
#include "tests/support/lagged_delivery.h"

namespace topogang::kubesched {

struct EmulatorOptions {
  std::string api_server_url;                        // e.g. FakeApiServer::url()
  std::string scheduler_name = "default-scheduler";  // the profile's schedulerName
  std::vector<ExtenderConfig> extenders;
  double time_scale = 1.0;                           // virtual seconds per real second
  absl::Duration cycle_cost = absl::ZeroDuration();  // virtual time spent per scheduling cycle
  QueueOptions queue;                                // backoffs, queueing hints, ...
  int percentage_of_nodes_to_score = 0;              // 0: adaptive (50 - nodes/125, min 5)
  bool in_tree_scoring = true;                       // add the default Score plugins
  uint64_t seed = 1;                                 // tie-breaking between equal scores
  size_t decision_log_size = 4096;                   // decisions kept for Decisions()
  int64_t missing_pods_allocatable = 110;            // see ParseNode
  // Real-time limit for the first list of nodes and pods in Start().
  absl::Duration sync_timeout = absl::Seconds(10);
  // Virtual time every watch event and relist change reaches kube-scheduler's cache late
  // (LaggedDelivery: its watch trailing topogangd's). Zero (and no watch_event_cost): as the
  // informers receive them.
  absl::Duration watch_lag = absl::ZeroDuration();
  // Virtual time the cache takes per informer callback on top of that (LaggedDelivery's
  // per_event): a burst of events reaches it later and later, then the backlog drains.
  absl::Duration watch_event_cost = absl::ZeroDuration();
  // Write PodScheduled=False on a pod after a failed attempt, when the condition changes
  // (pod_condition.h), as kube-scheduler does: one more pod event per changed refusal message.
  bool write_pod_conditions = true;
  // kube-scheduler's client-side rate limit on its own API calls (client_throttle.h):
  // clientConnection.qps and .burst, whose defaults are 50 and 100. 0 (the default here): no
  // limit, as a kube-scheduler run with a raised qps; the figures this emulator was first
  // checked against (2,000 pods bound in 8 s by the stock scheduler) need more than 50.
  double client_qps = 0;
  int client_burst = 100;
};

// Counters since Start().
struct EmulatorCounters {
  int64_t cycles = 0;             // scheduling cycles run (pods popped and tried)
  int64_t skipped = 0;            // popped but skipped (being deleted, or already assumed)
  int64_t scheduled = 0;          // cycles that assumed the pod on a node
  int64_t fit_errors = 0;         // cycles with no feasible node (FitError)
  int64_t scheduling_errors = 0;  // cycles that failed with an error (e.g. extender filter)
  int64_t filter_calls = 0;       // extender filter requests
  int64_t filter_errors = 0;
  int64_t prioritize_calls = 0;
  int64_t prioritize_errors = 0;
  int64_t bind_calls = 0;      // extender bind requests
  int64_t api_bind_calls = 0;  // pods/binding POSTs (no binder extender interested)
  int64_t binds_ok = 0;
  int64_t bind_failures = 0;     // either kind
  int64_t binds_in_flight = 0;   // right now
  int64_t condition_writes = 0;  // PodScheduled=False PATCHes sent (write_pod_conditions)
  // API calls that waited for the client's rate limit (client_qps), and how long in all
  // (virtual time).
  int64_t throttled_calls = 0;
  absl::Duration throttled_wait;
  // Real time spent inside scheduling cycles, by phase (for benchmarks: where a cycle goes).
  absl::Duration own_filter_time;       // the emulator's own filter plugins
  absl::Duration extender_filter_time;  // extender filter calls, round trip
  absl::Duration score_time;            // in-tree scores, prioritize calls and selectHost
};

// What the emulator knows of one pod of its scheduler.
struct PodRecord {
  std::string key, uid;
  std::string node_name;     // spec.nodeName as last seen from the API server ("" if pending)
  std::string assumed_node;  // host chosen by the last successful scheduling cycle
  int attempts = 0;          // scheduling cycles run for the pod
  int fit_errors = 0, errors = 0;
  int bind_attempts = 0, bind_failures = 0;
  bool binding = false;             // its binding cycle is running (e.g. held by the extender)
  std::string last_failure;         // the FailedScheduling text of the last failure
  absl::Time first_seen, bound_at;  // virtual time; bound_at when spec.nodeName appeared
  bool deleted = false;
};

struct Decision {
  enum class Kind { kAssumed, kFitError, kError, kSkipped, kBound, kBindFailed };
  Kind kind = Kind::kAssumed;
  absl::Time time;  // virtual
  int64_t cycle = 0;
  std::string pod;
  int attempt = 0;
  std::string node;         // chosen / bound host
  int evaluated_nodes = 0;  // nodes the filters looked at
  int feasible_nodes = 0;   // after own filters and extender filters
  int offered_to_extender = 0;
  std::string message;  // FitError / error text
  QueueName requeued_to = QueueName::kNone;
};
const char* DecisionKindString(Decision::Kind k);

class Emulator {
 public:
  explicit Emulator(EmulatorOptions options);
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  // Lists nodes and pods, then starts the watches, the scheduling thread and the queue's
  // flush timers. Fails when the first list does not arrive within sync_timeout. An emulator
  // runs once: Start after Stop fails.
  absl::Status Start();
  // Stops scheduling, cancels extender and API requests in flight (their binds are abandoned
  // and not requeued), and joins every thread.
  void Stop();

  // Blocks (real time) until `pred` holds; re-checked on every change the emulator sees and at
  // least every 5 ms. Returns pred's final value.
  bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(10));
  bool WaitForBound(const std::string& pod_key, absl::Duration timeout = absl::Seconds(10));

  EmulatorCounters counters() const;
  std::optional<PodRecord> Record(const std::string& pod_key) const;
  std::vector<PodRecord> Records() const;
  // The last decision_log_size decisions, oldest first.
  std::vector<Decision> Decisions() const;
  // Where the pod is in kube-scheduler's queue right now.
  QueueName WhereIs(const std::string& pod_key) const { return queue_.Where(pod_key); }
  const SchedulingQueue& queue() const { return queue_; }
  SchedulerCache& cache() { return cache_; }
  const Clock& clock() const { return clock_; }
  const EmulatorOptions& options() const { return options_; }

 private:
  struct CycleResult;
  void OnNodeAdd(const Json& obj);
  void OnNodeUpdate(const Json& old_obj, const Json& new_obj);
  void OnNodeDelete(const Json& obj);
  void OnPodAdd(const Json& obj);
  void OnPodUpdate(const Json& old_obj, const Json& new_obj);
  void OnPodDelete(const Json& obj);
  void MoveAll(const ClusterEvent& event, const NodePtr& precheck_node = nullptr);
  void ForgetAssumedAndMove(const PodPtr& pod);

  void SchedulingLoop();
  void FlushLoop();
  void ScheduleOne(QueuedPodInfo info);
  CycleResult SchedulePod(const Pod& pod);
  void Bind(QueuedPodInfo info, const std::string& node);
  void OnBindDone(QueuedPodInfo info, const std::string& node, absl::Status status);
  // handleSchedulingFailure: requeue unless the pod is gone or already assigned.
  // handleSchedulingFailure: requeue, then the PodScheduled condition. `unschedulable`: the
  // attempt was rejected (reason Unschedulable), not an error (SchedulerError).
  // `in_scheduling_loop`: the loop itself waits for the write's client token (a binding
  // cycle's failure waits in its own goroutine).
  QueueName HandleFailure(QueuedPodInfo info, bool fit_error,
                          const std::set<std::string>& rejectors, bool unschedulable,
                          const std::string& message, bool in_scheduling_loop);
  QueueName RequeueAfterFailure(QueuedPodInfo info);
  bool Responsible(const Pod& pod) const { return pod.scheduler_name == options_.scheduler_name; }
  void Log(Decision d);
  void Changed();
  void SleepReal(absl::Duration d);

  const EmulatorOptions options_;
  ScaledClock clock_;
  SchedulingQueue queue_;
  SchedulerCache cache_;
  std::vector<std::unique_ptr<ExtenderClient>> extenders_;  // non-ignorable first
  std::set<std::string> ignored_resources_;
  std::unique_ptr<ApiBinder> api_binder_;
  std::unique_ptr<PodConditionWriter> condition_writer_;
  std::unique_ptr<ClientThrottle> client_;  // the rate limit of kube-scheduler's clientset
  std::unique_ptr<Informer> node_informer_, pod_informer_;
  std::unique_ptr<topogang::testing::LaggedDelivery>
      lagged_;  // with watch_lag: runs the informers' callbacks
  // The same callbacks, each run through lagged_.
  Informer::Handlers Lagged(Informer::Handlers h);

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, PodPtr> pods_;  // the pod lister: namespace/name -> latest pod
  std::map<std::string, NodePtr> nodes_;
  std::map<std::string, PodRecord> records_;
  EmulatorCounters counters_;
  std::deque<Decision> decisions_;

  // Scheduling thread only.
  size_t next_start_node_index_ = 0;
  std::mt19937_64 rng_;

  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::thread scheduler_thread_, flush_thread_;
  std::mutex flush_mu_;
  std::condition_variable flush_cv_;
};

}  // namespace topogang::kubesched
