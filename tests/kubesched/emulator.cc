#include "tests/kubesched/emulator.h"

#include <sys/resource.h>

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace topogang::kubesched {

namespace {

bool Terminal(const Json& pod) {
  auto st = pod.find("status");
  if (st == pod.end() || !st->is_object()) return false;
  auto phase = st->find("phase");
  if (phase == st->end() || !phase->is_string()) return false;
  const std::string p = phase->get<std::string>();
  return p == "Succeeded" || p == "Failed";
}

}  // namespace

const char* DecisionKindString(Decision::Kind k) {
  switch (k) {
    case Decision::Kind::kAssumed:
      return "assumed";
    case Decision::Kind::kFitError:
      return "fit-error";
    case Decision::Kind::kError:
      return "error";
    case Decision::Kind::kSkipped:
      return "skipped";
    case Decision::Kind::kBound:
      return "bound";
    case Decision::Kind::kBindFailed:
      return "bind-failed";
  }
  return "?";
}

Emulator::Emulator(EmulatorOptions options)
    : options_(std::move(options)),
      clock_(options_.time_scale),
      queue_(&clock_, options_.queue),
      rng_(options_.seed) {
  // buildExtenders: ignorable extenders go last.
  for (bool ignorable : {false, true}) {
    for (const ExtenderConfig& c : options_.extenders) {
      if (c.ignorable != ignorable) continue;
      extenders_.push_back(std::make_unique<ExtenderClient>(c, &clock_));
      for (const ManagedResource& r : c.managed_resources) {
        if (r.ignored_by_scheduler) ignored_resources_.insert(r.name);
      }
    }
  }
  api_binder_ = std::make_unique<ApiBinder>(options_.api_server_url, &clock_);
  condition_writer_ = std::make_unique<PodConditionWriter>(options_.api_server_url);
  client_ = std::make_unique<ClientThrottle>(clock_, options_.client_qps, options_.client_burst);
}

Emulator::~Emulator() { Stop(); }

absl::Status Emulator::Start() {
  if (started_ || stopping_) return absl::FailedPreconditionError("already started");
  // Every bind held by the extender keeps one connection open (a 4,096-member gang waiting at
  // topogangd's barrier is 4,096 sockets); the usual soft limit of 1,024 would fail them.
  if (rlimit rl; getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  const absl::Duration retry = std::max(clock_.ToReal(absl::Seconds(1)), absl::Milliseconds(5));
  if (options_.watch_lag > absl::ZeroDuration() ||
      options_.watch_event_cost > absl::ZeroDuration()) {
    lagged_ = std::make_unique<topogang::testing::LaggedDelivery>(
        clock_.ToReal(options_.watch_lag), clock_.ToReal(options_.watch_event_cost));
  }
  // Without a lag the callbacks run on the informers' threads, as before (no copies).
  Informer::Handlers nodes{[this](const Json& o) { OnNodeAdd(o); },
                           [this](const Json& a, const Json& b) { OnNodeUpdate(a, b); },
                           [this](const Json& o) { OnNodeDelete(o); }};
  Informer::Handlers pods{[this](const Json& o) { OnPodAdd(o); },
                          [this](const Json& a, const Json& b) { OnPodUpdate(a, b); },
                          [this](const Json& o) { OnPodDelete(o); }};
  if (lagged_) {
    nodes = Lagged(std::move(nodes));
    pods = Lagged(std::move(pods));
  }
  node_informer_ = std::make_unique<Informer>(options_.api_server_url, "/api/v1/nodes",
                                              std::move(nodes), nullptr, retry);
  // newPodInformer: status.phase!=Succeeded,status.phase!=Failed.
  pod_informer_ = std::make_unique<Informer>(
      options_.api_server_url, "/api/v1/pods", std::move(pods),
      [](const Json& pod) { return !Terminal(pod); }, retry);
  node_informer_->Start();
  pod_informer_->Start();
  started_ = true;
  const absl::Time deadline = absl::Now() + options_.sync_timeout;
  while (!(node_informer_->HasSynced() && pod_informer_->HasSynced())) {
    if (absl::Now() > deadline) {
      Stop();
      return absl::DeadlineExceededError(
          absl::StrCat("no node and pod list from ", options_.api_server_url));
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  // cmd/kube-scheduler/app/server.go (startInformersAndWaitForSync): no cycle before the first
  // lists are in the cache.
  if (lagged_ && !lagged_->Drain(std::max(deadline - absl::Now(),
                                          clock_.ToReal(options_.watch_lag) + absl::Seconds(1)))) {
    Stop();
    return absl::DeadlineExceededError("the first lists did not reach the cache in time");
  }
  scheduler_thread_ = std::thread([this] { SchedulingLoop(); });
  flush_thread_ = std::thread([this] { FlushLoop(); });
  return absl::OkStatus();
}

void Emulator::Stop() {
  if (!started_) return;
  stopping_ = true;
  queue_.Close();
  for (auto& e : extenders_) e->CancelAll();
  api_binder_->CancelAll();
  condition_writer_->CancelAll();
  client_->Stop();  // calls still waiting for a token go now, into the cancelled clients
  {
    std::lock_guard<std::mutex> lock(flush_mu_);
    flush_cv_.notify_all();
  }
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
  if (flush_thread_.joinable()) flush_thread_.join();
  if (node_informer_) node_informer_->Stop();
  if (pod_informer_) pod_informer_->Stop();
  if (lagged_) lagged_->Stop();
  // Cancelled binds report back promptly; wait for their callbacks to finish.
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, std::chrono::seconds(30), [&] { return counters_.binds_in_flight == 0; });
  started_ = false;
}

void Emulator::Changed() { changed_.notify_all(); }

Informer::Handlers Emulator::Lagged(Informer::Handlers h) {
  topogang::testing::LaggedDelivery* d = lagged_.get();
  return {[d, f = h.on_add](const Json& o) { d->Post([f, o] { f(o); }); },
          [d, f = h.on_update](const Json& a, const Json& b) { d->Post([f, a, b] { f(a, b); }); },
          [d, f = h.on_delete](const Json& o) { d->Post([f, o] { f(o); }); }};
}

void Emulator::SleepReal(absl::Duration d) {
  std::unique_lock<std::mutex> lock(flush_mu_);
  flush_cv_.wait_for(lock, absl::ToChronoNanoseconds(d), [&] { return stopping_.load(); });
}

bool Emulator::WaitFor(const std::function<bool()>& pred, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (absl::Now() >= deadline) return pred();
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::milliseconds(5));
  }
}

bool Emulator::WaitForBound(const std::string& pod_key, absl::Duration timeout) {
  return WaitFor(
      [&] {
        auto r = Record(pod_key);
        return r && !r->node_name.empty();
      },
      timeout);
}

EmulatorCounters Emulator::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  EmulatorCounters c = counters_;
  c.throttled_calls = client_->throttled();
  c.throttled_wait = client_->waited();
  return c;
}

std::optional<PodRecord> Emulator::Record(const std::string& pod_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(pod_key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::vector<PodRecord> Emulator::Records() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PodRecord> out;
  for (const auto& [k, r] : records_) out.push_back(r);
  return out;
}

std::vector<Decision> Emulator::Decisions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {decisions_.begin(), decisions_.end()};
}

void Emulator::Log(Decision d) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    decisions_.push_back(std::move(d));
    while (decisions_.size() > options_.decision_log_size) decisions_.pop_front();
  }
  Changed();
}

// --- cluster events (eventhandlers.go) ---------------------------------------------------------

void Emulator::MoveAll(const ClusterEvent& event, const NodePtr& precheck_node) {
  std::function<bool(const Pod&)> precheck;
  if (!options_.queue.queueing_hints) {
    if (event.resource == EventResource::kPod && !(event.action & kDelete)) {
      // AssignedPodAdded/AssignedPodUpdated move only pods with inter-pod affinity or spread
      // constraints, which this emulator does not model: none.
      precheck = [](const Pod&) { return false; };
    } else if (precheck_node) {
      // preCheckForNode: the pod would be admitted on the node (fit, affinity, taints).
      NodeStatePtr state = cache_.GetNode(precheck_node->name);
      if (state) {
        precheck = [state](const Pod& pod) {
          return Fits(pod, *state).empty() && MatchesRequiredNodeAffinity(pod, *state->node) &&
                 !FindUntoleratedTaint(state->node->taints, pod.tolerations);
        };
      }
    }
  }
  queue_.MoveAllToActiveOrBackoffQueue(event, precheck);
}

void Emulator::OnNodeAdd(const Json& obj) {
  auto node = ParseNode(obj, options_.missing_pods_allocatable);
  if (!node.ok()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_[(*node)->name] = *node;
  }
  cache_.AddNode(*node);
  MoveAll(NodeAddEvent(*node), *node);
  Changed();
}

void Emulator::OnNodeUpdate(const Json& old_obj, const Json& new_obj) {
  auto node = ParseNode(new_obj, options_.missing_pods_allocatable);
  if (!node.ok()) return;
  NodePtr old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = nodes_[(*node)->name];
    nodes_[(*node)->name] = *node;
  }
  if (!old) {
    auto parsed = ParseNode(old_obj, options_.missing_pods_allocatable);
    if (parsed.ok()) old = *parsed;
  }
  cache_.UpdateNode(*node);
  if (old) {
    for (const ClusterEvent& e : NodeUpdateEvents(old, *node)) MoveAll(e, *node);
  }
  Changed();
}

void Emulator::OnNodeDelete(const Json& obj) {
  auto node = ParseNode(obj, options_.missing_pods_allocatable);
  if (!node.ok()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_.erase((*node)->name);
  }
  MoveAll(NodeDeleteEvent(*node));
  cache_.RemoveNode((*node)->name);
  Changed();
}

void Emulator::OnPodAdd(const Json& obj) {
  auto parsed = ParsePod(obj);
  if (!parsed.ok()) return;
  PodPtr pod = *parsed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pods_[pod->key()] = pod;
    if (Responsible(*pod)) {
      auto [it, inserted] = records_.try_emplace(pod->key());
      PodRecord& r = it->second;
      if (inserted || r.uid != pod->uid) {
        r = PodRecord{};
        r.key = pod->key();
        r.uid = pod->uid;
        r.first_seen = clock_.Now();
      }
      r.deleted = false;
      r.node_name = pod->node_name;
      if (!pod->node_name.empty()) r.bound_at = clock_.Now();
    }
  }
  if (!pod->node_name.empty()) {
    cache_.AddPod(pod);
    MoveAll(AssignedPodAddEvent(pod));
  } else if (Responsible(*pod)) {
    queue_.Add(pod);
  }
  Changed();
}

void Emulator::OnPodUpdate(const Json& old_obj, const Json& new_obj) {
  auto parsed = ParsePod(new_obj);
  if (!parsed.ok()) return;
  PodPtr pod = *parsed;
  PodPtr old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = pods_.find(pod->key()); it != pods_.end()) old = it->second;
    pods_[pod->key()] = pod;
    if (auto it = records_.find(pod->key()); it != records_.end()) {
      if (it->second.node_name.empty() && !pod->node_name.empty()) {
        it->second.bound_at = clock_.Now();
      }
      it->second.node_name = pod->node_name;
    }
  }
  if (!old) {
    auto p = ParsePod(old_obj);
    if (!p.ok()) return;
    old = *p;
  }
  if (!old->node_name.empty()) {
    cache_.UpdatePod(pod);
    for (const ClusterEvent& e : PodUpdateEvents(old, pod, /*assigned=*/true)) MoveAll(e);
  } else if (!pod->node_name.empty()) {
    // A binding: the pod joins the cache (confirming an assumed pod) and leaves the queue.
    cache_.AddPod(pod);
    MoveAll(AssignedPodAddEvent(pod));
    if (Responsible(*old)) queue_.Delete(*old);
  } else if (Responsible(*old)) {
    if (old->resource_version != pod->resource_version) {
      if (cache_.IsAssumed(pod->uid)) {
        if (pod->deleting && !old->deleting) ForgetAssumedAndMove(pod);
      } else {
        queue_.Update(old, pod);
      }
    }
  }
  Changed();
}

void Emulator::OnPodDelete(const Json& obj) {
  auto parsed = ParsePod(obj);
  if (!parsed.ok()) return;
  PodPtr pod = *parsed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = pods_.find(pod->key()); it != pods_.end()) {
      if (pod->node_name.empty()) pod = it->second;
      pods_.erase(it);
    }
    if (auto it = records_.find(pod->key()); it != records_.end() && it->second.uid == pod->uid) {
      it->second.deleted = true;
    }
  }
  if (!pod->node_name.empty()) {
    cache_.RemovePod(*pod);
    MoveAll(AssignedPodDeleteEvent(pod));
  } else if (Responsible(*pod)) {
    queue_.Delete(*pod);
    if (cache_.IsAssumed(pod->uid)) ForgetAssumedAndMove(pod);
  }
  Changed();
}

void Emulator::ForgetAssumedAndMove(const PodPtr& pod) {
  // handleAssumedPodDeletion: free what the assumed pod held and tell the queue.
  auto assumed = std::make_shared<Pod>(*pod);
  assumed->node_name = cache_.NodeOf(pod->uid);
  if (cache_.ForgetPod(pod->uid).ok()) MoveAll(AssignedPodDeleteEvent(assumed));
}

}  // namespace topogang::kubesched
