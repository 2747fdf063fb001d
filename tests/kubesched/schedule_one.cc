// The scheduling and binding cycles (pkg/scheduler/schedule_one.go) and the queue's flush
// timers (PriorityQueue.Run in pkg/scheduler/backend/queue/scheduling_queue.go).
#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/kubesched/emulator.h"
#include "tests/kubesched/node_scores.h"

namespace topogang::kubesched {

namespace {

constexpr int64_t kMinFeasibleNodesToFind = 100;          // schedule_one.go
constexpr int64_t kMinFeasibleNodesPercentageToFind = 5;  // schedule_one.go
constexpr int64_t kMaxExtenderPriority = 10;              // extenderv1.MaxExtenderPriority
constexpr absl::Duration kBackoffFlushPeriod = absl::Seconds(1);
constexpr absl::Duration kLeftoverFlushPeriod = absl::Seconds(30);

// FitError.Error(): "0/N nodes are available: <count> <reason>, ...." with the histogram
// entries sorted as strings.
std::string FitErrorMessage(size_t num_nodes, const std::map<std::string, Status>& statuses) {
  std::map<std::string, int> histogram;
  for (const auto& [node, s] : statuses) {
    for (const std::string& r : s.reasons) ++histogram[r];
  }
  std::vector<std::string> parts;
  for (const auto& [reason, count] : histogram) parts.push_back(absl::StrCat(count, " ", reason));
  std::sort(parts.begin(), parts.end());
  std::string msg = absl::StrCat("0/", num_nodes, " nodes are available:");
  if (!parts.empty()) absl::StrAppend(&msg, " ", absl::StrJoin(parts, ", "), ".");
  return msg;
}

}  // namespace

struct Emulator::CycleResult {
  enum class Outcome { kOk, kFitError, kNoNodes, kError } outcome = Outcome::kOk;
  std::string host;
  std::string message;
  std::set<std::string> rejectors;  // Diagnosis.UnschedulablePlugins
  int evaluated = 0, feasible = 0, offered = 0;
};

// --- the scheduling cycle -----------------------------------------------------------------------

void Emulator::SchedulingLoop() {
  while (!stopping_) {
    std::optional<QueuedPodInfo> info = queue_.Pop();
    if (!info) break;
    if (stopping_) {
      queue_.Done(info->pod->uid);
      break;
    }
    ScheduleOne(std::move(*info));
  }
}

void Emulator::FlushLoop() {
  // PriorityQueue.Run: flushBackoffQCompleted every second (aligned to whole seconds with
  // SchedulerPopFromBackoffQ), flushUnschedulablePodsLeftover every 30 seconds.
  absl::Time next_backoff = clock_.Now() + kBackoffFlushPeriod;
  if (options_.queue.pop_from_backoff_q) {
    next_backoff = absl::FromUnixSeconds(absl::ToUnixSeconds(next_backoff));
  }
  absl::Time next_leftover = clock_.Now() + kLeftoverFlushPeriod;
  while (!stopping_) {
    const absl::Time next = std::min(next_backoff, next_leftover);
    const absl::Duration wait = next - clock_.Now();
    if (wait > absl::ZeroDuration()) {
      SleepReal(clock_.ToReal(wait));
      continue;
    }
    if (clock_.Now() >= next_backoff) {
      queue_.FlushBackoffQCompleted();
      next_backoff += kBackoffFlushPeriod;
    }
    if (clock_.Now() >= next_leftover) {
      queue_.FlushUnschedulablePodsLeftover();
      next_leftover += kLeftoverFlushPeriod;
    }
  }
}

void Emulator::ScheduleOne(QueuedPodInfo info) {
  const PodPtr pod = info.pod;
  const std::string key = pod->key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.cycles;
    auto it = records_.find(key);
    if (it != records_.end()) it->second.attempts = info.attempts;
  }
  Decision d;
  d.time = clock_.Now();
  d.cycle = queue_.SchedulingCycle();
  d.pod = key;
  d.attempt = info.attempts;
  // skipPodSchedule: being deleted, or assumed already (an update requeued it mid-cycle).
  if (pod->deleting || cache_.IsAssumed(pod->uid)) {
    queue_.Done(pod->uid);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.skipped;
    }
    d.kind = Decision::Kind::kSkipped;
    Log(std::move(d));
    return;
  }
  if (options_.cycle_cost > absl::ZeroDuration()) SleepReal(clock_.ToReal(options_.cycle_cost));

  CycleResult r = SchedulePod(*pod);
  if (r.outcome == CycleResult::Outcome::kOk) {
    // assume: the cache counts the pod on the host until the bind settles.
    absl::Status st = cache_.AssumePod(pod, r.host);
    if (!st.ok()) {
      r.outcome = CycleResult::Outcome::kError;
      r.message = std::string(st.message());
    }
  }
  d.node = r.host;
  d.evaluated_nodes = r.evaluated;
  d.feasible_nodes = r.feasible;
  d.offered_to_extender = r.offered;
  d.message = r.message;
  if (r.outcome != CycleResult::Outcome::kOk) {
    const bool fit = r.outcome == CycleResult::Outcome::kFitError;
    const bool unschedulable = fit || r.outcome == CycleResult::Outcome::kNoNodes;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++(unschedulable ? counters_.fit_errors : counters_.scheduling_errors);
      if (auto it = records_.find(key); it != records_.end()) {
        ++(unschedulable ? it->second.fit_errors : it->second.errors);
        it->second.last_failure = r.message;
      }
    }
    d.kind = unschedulable ? Decision::Kind::kFitError : Decision::Kind::kError;
    d.requeued_to = HandleFailure(std::move(info), fit, r.rejectors, unschedulable, r.message,
                                  /*in_scheduling_loop=*/true);
    Log(std::move(d));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.scheduled;
    if (auto it = records_.find(key); it != records_.end()) it->second.assumed_node = r.host;
  }
  d.kind = Decision::Kind::kAssumed;
  Log(std::move(d));
  Bind(std::move(info), r.host);
}

Emulator::CycleResult Emulator::SchedulePod(const Pod& pod) {
  CycleResult r;
  const NodeSnapshot snapshot_ptr = cache_.Snapshot();
  const std::vector<NodeStatePtr>& snapshot = *snapshot_ptr;
  const size_t n = snapshot.size();
  if (n == 0) {
    r.outcome = CycleResult::Outcome::kNoNodes;
    r.message = "no nodes available to schedule pods";
    return r;
  }
  // numFeasibleNodesToFind.
  size_t to_find = n;
  if (static_cast<int64_t>(n) >= kMinFeasibleNodesToFind) {
    int64_t pct = options_.percentage_of_nodes_to_score;
    if (pct <= 0) {
      pct =
          std::max<int64_t>(50 - static_cast<int64_t>(n) / 125, kMinFeasibleNodesPercentageToFind);
    }
    to_find = std::max<int64_t>(static_cast<int64_t>(n) * pct / 100, kMinFeasibleNodesToFind);
    to_find = std::min(to_find, n);
  }
  // findNodesThatPassFilters, from where the previous cycle stopped.
  absl::Time phase = absl::Now();
  auto add_phase = [&](absl::Duration EmulatorCounters::*field) {
    const absl::Time now = absl::Now();
    std::lock_guard<std::mutex> lock(mu_);
    counters_.*field += now - phase;
    phase = now;
  };
  std::vector<const NodeState*> feasible;
  std::map<std::string, Status> statuses;
  size_t processed = 0;
  for (size_t i = 0; i < n && feasible.size() < to_find; ++i) {
    const NodeState& ns = *snapshot[(next_start_node_index_ + i) % n];
    ++processed;
    Status s = RunFilters(pod, ns, ignored_resources_);
    if (s.ok()) {
      feasible.push_back(&ns);
    } else {
      if (s.rejected()) r.rejectors.insert(s.plugin);
      statuses[ns.node->name] = std::move(s);
    }
  }
  next_start_node_index_ = (next_start_node_index_ + processed) % n;
  r.evaluated = static_cast<int>(processed);
  add_phase(&EmulatorCounters::own_filter_time);

  // findNodesThatPassExtenders: each interested extender filters what the previous one left.
  const size_t before = feasible.size();
  for (auto& ext : extenders_) {
    if (feasible.empty()) break;
    if (!ext->IsInterested(pod)) continue;
    if (ext->IsFilter()) {
      if (r.offered == 0) r.offered = static_cast<int>(feasible.size());
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.filter_calls;
    }
    auto res = ext->Filter(pod, feasible);
    if (!res.ok()) {
      if (ext->IsIgnorable()) continue;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++counters_.filter_errors;
      }
      r.outcome = CycleResult::Outcome::kError;
      r.message = std::string(res.status().message());
      return r;
    }
    for (const auto& [node, msg] : res->failed_and_unresolvable) {
      statuses[node] = Status{Code::kUnschedulableAndUnresolvable, kExtenderPlugin, {msg}};
    }
    for (const auto& [node, msg] : res->failed) {
      if (res->failed_and_unresolvable.count(node)) continue;
      statuses[node] = Status{Code::kUnschedulable, kExtenderPlugin, {msg}};
    }
    // Returned names are normally a subset of those offered; a Nodes reply is not checked, so
    // fall back to the whole snapshot for a name that was not offered.
    std::unordered_map<std::string_view, const NodeState*> all_nodes;
    std::vector<const NodeState*> next;
    for (size_t i = 0; i < res->nodes.size(); ++i) {
      const NodeState* s = i < res->offered.size() ? res->offered[i] : nullptr;
      if (!s) {
        if (all_nodes.empty()) {
          for (const NodeStatePtr& p : snapshot) all_nodes.emplace(p->node->name, p.get());
        }
        auto it = all_nodes.find(res->nodes[i]);
        s = it == all_nodes.end() ? nullptr : it->second;
      }
      if (s) next.push_back(s);
    }
    feasible = std::move(next);
  }
  add_phase(&EmulatorCounters::extender_filter_time);
  if (feasible.size() != before) r.rejectors.insert(kExtenderPlugin);
  r.feasible = static_cast<int>(feasible.size());
  if (feasible.empty()) {
    r.outcome = CycleResult::Outcome::kFitError;
    r.message = FitErrorMessage(n, statuses);
    return r;
  }
  if (feasible.size() == 1) {
    r.host = feasible[0]->node->name;
    return r;
  }

  // prioritizeNodes: in-tree scores plus weight x score x 10 from each interested extender.
  std::vector<int64_t> scores = options_.in_tree_scoring ? InTreeScores(pod, feasible)
                                                         : std::vector<int64_t>(feasible.size(), 0);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < feasible.size(); ++i) index[feasible[i]->node->name] = i;
  std::vector<ExtenderClient*> prioritizers;
  for (auto& ext : extenders_) {
    if (ext->IsInterested(pod)) prioritizers.push_back(ext.get());
  }
  std::vector<absl::StatusOr<std::vector<HostPriority>>> results(prioritizers.size(),
                                                                 absl::UnknownError("not run"));
  if (prioritizers.size() == 1) {
    results[0] = prioritizers[0]->Prioritize(pod, feasible);
  } else {
    std::vector<std::thread> threads;  // one goroutine per extender, as kube-scheduler does
    for (size_t i = 0; i < prioritizers.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = prioritizers[i]->Prioritize(pod, feasible); });
    }
    for (std::thread& t : threads) t.join();
  }
  for (size_t i = 0; i < prioritizers.size(); ++i) {
    const bool called = prioritizers[i]->IsPrioritizer();
    {
      std::lock_guard<std::mutex> lock(mu_);
      counters_.prioritize_calls += called;
      counters_.prioritize_errors += called && !results[i].ok();
    }
    if (!results[i].ok()) continue;  // prioritize errors are ignored
    const int64_t weight = called ? prioritizers[i]->config().weight : 0;
    for (const HostPriority& hp : *results[i]) {
      auto it = index.find(hp.host);
      if (it != index.end()) {
        scores[it->second] += hp.score * weight * (kMaxNodeScore / kMaxExtenderPriority);
      }
    }
  }
  // selectHost: the highest total score, ties broken uniformly at random.
  size_t best = 0, ties = 1;
  for (size_t i = 1; i < feasible.size(); ++i) {
    if (scores[i] > scores[best]) {
      best = i;
      ties = 1;
    } else if (scores[i] == scores[best]) {
      ++ties;
      if (std::uniform_int_distribution<size_t>(0, ties - 1)(rng_) == 0) best = i;
    }
  }
  r.host = feasible[best]->node->name;
  add_phase(&EmulatorCounters::score_time);
  return r;
}

void Emulator::Bind(QueuedPodInfo info, const std::string& node) {
  ExtenderClient* binder = nullptr;
  for (auto& ext : extenders_) {
    if (ext->IsBinder() && ext->IsInterested(*info.pod)) {
      binder = ext.get();
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.binds_in_flight;
    ++(binder ? counters_.bind_calls : counters_.api_bind_calls);
    if (auto it = records_.find(info.pod->key()); it != records_.end()) {
      ++it->second.bind_attempts;
      it->second.binding = true;
    }
  }
  // bindingCycle: the scheduling attempt is over once the pod is past Permit.
  queue_.Done(info.pod->uid);
  const PodPtr pod = info.pod;
  auto done = [this, info = std::move(info), node](absl::Status st) mutable {
    OnBindDone(std::move(info), node, std::move(st));
  };
  if (binder) {
    binder->BindAsync(*pod, node, std::move(done));  // an HTTP call to the extender, not the API
  } else {
    // DefaultBinder: the pods/binding POST waits for the client's token in its goroutine.
    client_->Call([this, pod, node, done = std::move(done)]() mutable {
      api_binder_->BindAsync(*pod, node, std::move(done));
    });
  }
}

void Emulator::OnBindDone(QueuedPodInfo info, const std::string& node, absl::Status status) {
  const PodPtr pod = info.pod;
  cache_.FinishBinding(pod->uid);
  Decision d;
  d.time = clock_.Now();
  d.pod = pod->key();
  d.attempt = info.attempts;
  d.node = node;
  if (stopping_) {
    // Abandoned: the emulator is going away; nothing is requeued.
  } else if (status.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.binds_ok;
    }
    d.kind = Decision::Kind::kBound;
    d.cycle = queue_.SchedulingCycle();
    Log(std::move(d));
  } else {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.bind_failures;
      if (auto it = records_.find(pod->key()); it != records_.end()) {
        ++it->second.bind_failures;
        it->second.last_failure = std::string(status.message());
      }
    }
    // handleBindingCycleError: forget the assumed pod (an AssignedPodDelete for the others),
    // then the failure handler requeues it with backoff.
    auto assumed = std::make_shared<Pod>(*pod);
    assumed->node_name = node;
    if (cache_.ForgetPod(pod->uid).ok()) MoveAll(AssignedPodDeleteEvent(assumed));
    d.kind = Decision::Kind::kBindFailed;
    d.message = std::string(status.message());
    d.requeued_to = HandleFailure(std::move(info), /*fit_error=*/false, {},
                                  /*unschedulable=*/false, d.message,
                                  /*in_scheduling_loop=*/false);
    Log(std::move(d));
  }
  // Last: once binds_in_flight drops, Stop() may return and the emulator go away, so nothing
  // of it is touched after the lock is released.
  std::lock_guard<std::mutex> lock(mu_);
  --counters_.binds_in_flight;
  if (auto it = records_.find(pod->key()); it != records_.end()) it->second.binding = false;
  changed_.notify_all();
}

QueueName Emulator::HandleFailure(QueuedPodInfo info, bool fit_error,
                                  const std::set<std::string>& rejectors, bool unschedulable,
                                  const std::string& message, bool in_scheduling_loop) {
  if (fit_error) info.unschedulable_plugins = rejectors;
  // updatePod runs after the requeue, on the pod as the attempt saw it, and whether or not it
  // was requeued (pkg/scheduler/schedule_one.go handleSchedulingFailure).
  const PodPtr attempted = info.pod;
  const QueueName q = RequeueAfterFailure(std::move(info));
  if (options_.write_pod_conditions && !stopping_) {
    if (auto patch =
            PodScheduledFalsePatch(*attempted, unschedulable ? "Unschedulable" : "SchedulerError",
                                   message, clock_.Now())) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++counters_.condition_writes;
      }
      if (in_scheduling_loop) {
        if (client_->Wait()) condition_writer_->PatchAsync(*attempted, *patch);
      } else {
        client_->Call([this, attempted, p = *std::move(patch)] {
          condition_writer_->PatchAsync(*attempted, p);
        });
      }
    }
  }
  return q;
}

QueueName Emulator::RequeueAfterFailure(QueuedPodInfo info) {
  const std::string uid = info.pod->uid;
  PodPtr cached;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = pods_.find(info.pod->key()); it != pods_.end()) cached = it->second;
  }
  // Gone from the informer cache, or assigned meanwhile (e.g. the extender bound it but its
  // reply timed out): not requeued.
  if (!cached || !cached->node_name.empty()) {
    queue_.Done(uid);
    return QueueName::kNone;
  }
  if (cached->uid != uid) queue_.Done(uid);
  info.pod = cached;
  return queue_.AddUnschedulableIfNotPresent(std::move(info), queue_.SchedulingCycle());
}

}  // namespace topogang::kubesched
