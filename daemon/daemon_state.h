// The daemon's shared state: the GangScheduler behind one mutex, node health merged from its
// several sources, and a bounded log of decision events that streams (gRPC WatchDecisions,
// Kubernetes Events, metrics) read. Every front end (extender HTTP, gRPC, kube watch, agents)
// goes through this object, so they all see one consistent model.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "daemon/avoidance_book.h"
#include "daemon/slow_nodes.h"
#include "scheduler/clock.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/spares.h"

namespace topogang {

struct DecisionEvent {
  int64_t seq = 0;  // assigned by Publish, strictly increasing
  absl::Time time;
  // reserve, bind, expire, release, replan, drop, replacement, node-unhealthy, node-healthy,
  // gpu-unhealthy, gpu-healthy, ...
  std::string kind;
  std::string gang;
  std::string node;
  std::string detail;
};

// Independent reasons a node may be unusable. The node is healthy only when none is set, so an
// admin undrain does not hide a NotReady node, and an agent coming back does not undo a cordon.
enum class HealthSource : uint8_t {
  kKubeCordon = 1,    // spec.unschedulable
  kKubeTaint = 2,     // node lifecycle taint (node.kubernetes.io/*); other taints are per pod
  kKubeNotReady = 4,  // Ready condition not True
  kAdminDrain = 8,    // topogang drain (gRPC/CLI)
  kAgentLost = 16,    // agent heartbeat missed past the window
};
const char* HealthSourceName(HealthSource s);

class DaemonState {
 public:
  DaemonState(GangScheduler scheduler, const Clock& clock, size_t event_capacity = 10000);

  // Runs f(GangScheduler&) under the lock. Keep f short and free of I/O.
  template <typename F>
  auto With(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f(sched_);
  }

  // Runs f(GangScheduler&) under the lock with the hot spares hidden from planning (a SpareMask):
  // every place that plans ordinary work (reservations, the queue, preemption) goes through
  // here, so no gang but a replacement ever lands on a spare.
  template <typename F>
  auto Plan(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    SpareMask mask(sched_, spares_);
    return f(sched_);
  }
  // Runs f(GangScheduler&, const SparePool&) under the lock, spares visible (replacements).
  template <typename F>
  auto WithSpares(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f(sched_, static_cast<const SparePool&>(spares_));
  }

  const Clock& clock() const { return clock_; }
  // Per-node slowness from the agents' signals (its own lock; never taken under this one's).
  SlowNodes& slow_nodes() { return slow_nodes_; }
  // Which nodes each gang avoids and why, for explain (its own lock, like slow_nodes).
  AvoidanceBook& avoidance() { return avoidance_; }

  // Swaps in a scheduler built for a new node set (the kube node watch saw nodes come or go),
  // re-applying every node's current health sources and every GPU fault to it.
  void ReplaceScheduler(GangScheduler scheduler);

  // Sets or clears one health source of a node, re-planning reservations and proposing
  // replacements as the core decides; every resulting change is published as an event.
  absl::Status SetNodeHealth(absl::string_view node, HealthSource source, bool bad,
                             absl::string_view reason);
  // An operator's drain or undrain (gRPC/CLI): kAdminDrain, and recorded where it survives a
  // restart (cluster mode: an annotation on the Node, see SetDrainRecorder).
  absl::Status SetAdminDrain(absl::string_view node, bool drained, absl::string_view reason);
  // Called after every admin drain change, outside the lock.
  void SetDrainRecorder(
      std::function<void(const std::string& node, bool drained, const std::string& reason)> r);
  // Marks one GPU (node-local index) faulty or healthy again.
  absl::Status SetGpuHealth(absl::string_view node, int local_index, bool faulty,
                            absl::string_view reason);
  // Health sources currently set on a node (bitwise OR of HealthSource), 0 when healthy/unknown.
  uint8_t NodeHealthSources(absl::string_view node) const;
  std::string NodeHealthReason(absl::string_view node) const;

  // --- Hot spares (daemon/daemon_spares.cc) ---------------------------------------------------
  // The operator's settings (daemon.spares: tier, per_domain; options.marked_nodes is ignored)
  // and the nodes the spare label marks, which come separately, as the node sync reads them.
  // Each rebuilds the pool. Off (no spares) until one is set.
  void SetSpareOptions(const SpareOptions& options);
  void SetMarkedSpares(std::vector<std::string> nodes);
  // Chooses the spares again on the model as it is now: idle healthy nodes only (besides the
  // marked ones), so a node found running pods after a restart is not promised as a spare. Also
  // done by ReplaceScheduler and after every health change; the ledger calls it once bound pods
  // are adopted and after a spare was taken (its domain gets a fresh one if it has an idle node).
  void RebuildSpares();
  struct SpareNode {
    std::string node;
    std::string domain;  // path of its pool-tier domain
    int gpus = 0;
    int free_gpus = 0;  // free and usable
    int used_gpus = 0;  // held by a reservation or a running pod
    bool marked = false;
    bool healthy = true;
    std::vector<std::string> gangs;  // gangs holding GPUs on it (a replacement, or adopted pods)
  };
  struct SpareReport {
    std::string tier;  // the tier spares are counted per domain of ("" when off)
    int per_domain = 0;
    std::string error;  // why the configured pool could not be built on this model, if so
    std::vector<SpareNode> nodes;
  };
  SpareReport ListSpares() const;

  // Nodes and GPUs of the model by state, for metrics. Each set of counts partitions its total.
  struct HealthCounts {
    int nodes_healthy = 0;
    int nodes_unhealthy = 0;  // NotReady or agent lost (whatever else is set)
    int nodes_cordoned = 0;   // only operator sources: cordon, NoSchedule taint, admin drain
    int gpus_free = 0;        // free and usable
    int gpus_allocated = 0;   // held by a reservation or a running pod
    int gpus_unhealthy = 0;   // free but unusable: faulty, or on an unusable node
  };
  // O(unusable nodes + GPUs/64) under the lock.
  HealthCounts CountHealth() const;

  // Events. Publish assigns seq and time and wakes waiters.
  int64_t Publish(DecisionEvent e);
  // Events with seq > after (at most max). Blocks until there is one, the deadline passes, or
  // Shutdown() is called.
  std::vector<DecisionEvent> WaitEvents(int64_t after, absl::Time deadline, size_t max = 256);
  int64_t LastSeq() const;
  // Called for every published event, under the state's lock (so in publish order): must be
  // quick and must not call back into this object. Metrics count events by kind here.
  void SetEventObserver(std::function<void(const DecisionEvent&)> observer);
  // Also called for every event under the lock, for the daemon's log: an operator reads one line
  // per decision (reserve, bind, expire, re-plan, unschedulable with its reason).
  void SetDecisionLogger(std::function<void(const DecisionEvent&)> logger);
  // Wakes every waiter for good (daemon shutdown).
  void Shutdown();

 private:
  void PublishLocked(DecisionEvent e);
  void PublishReplan(const std::vector<ReplanEvent>& events, absl::string_view node);
  void RebuildSparesLocked();
  // A health change applied with the spares hidden (except `node`, whose own health changes), so
  // re-planned reservations avoid them; the replacement proposals for running gangs then take
  // the spare next to each lost member first.
  std::vector<ReplanEvent> ApplyHealthLocked(
      int node, const std::function<std::vector<ReplanEvent>()>& change);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  const Clock& clock_;
  SlowNodes slow_nodes_;
  AvoidanceBook avoidance_;
  GangScheduler sched_;
  std::map<std::string, uint8_t, std::less<>> node_sources_;
  std::map<std::string, std::string, std::less<>> node_reason_;
  std::map<std::string, std::set<int>, std::less<>> gpu_faults_;  // node -> faulty GPU indexes
  std::deque<DecisionEvent> events_;
  SpareOptions spare_options_;  // marked_nodes by name; those not in the model are left out
  SparePool spares_;
  std::string spare_error_;
  std::function<void(const DecisionEvent&)> observer_;
  std::function<void(const DecisionEvent&)> logger_;
  std::function<void(const std::string&, bool, const std::string&)> drain_recorder_;
  size_t event_capacity_;
  int64_t next_seq_ = 1;
  bool shutdown_ = false;
};

}  // namespace topogang
