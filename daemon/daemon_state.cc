#include "daemon/daemon_state.h"

#include "absl/strings/str_cat.h"

namespace topogang {

const char* HealthSourceName(HealthSource s) {
  switch (s) {
    case HealthSource::kKubeCordon:
      return "cordoned";
    case HealthSource::kKubeTaint:
      return "tainted";
    case HealthSource::kKubeNotReady:
      return "not-ready";
    case HealthSource::kAdminDrain:
      return "drained";
    case HealthSource::kAgentLost:
      return "agent-lost";
  }
  return "?";
}

DaemonState::DaemonState(GangScheduler scheduler, const Clock& clock, size_t event_capacity)
    : clock_(clock), sched_(std::move(scheduler)), event_capacity_(event_capacity) {}

absl::Status DaemonState::SetNodeHealth(absl::string_view node, HealthSource source, bool bad,
                                        absl::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  int n = sched_.cluster().FindNode(node);
  if (n < 0) return absl::NotFoundError(absl::StrCat("unknown node '", node, "'"));
  uint8_t& mask = node_sources_[std::string(node)];
  const uint8_t before = mask;
  if (bad) {
    mask |= static_cast<uint8_t>(source);
    node_reason_[std::string(node)] = std::string(reason);
  } else {
    mask &= ~static_cast<uint8_t>(source);
  }
  if ((before != 0) == (mask != 0)) return absl::OkStatus();  // overall health unchanged
  absl::Time now = clock_.Now();
  auto events = ApplyHealthLocked(n, [&] { return sched_.SetNodeCordoned(n, mask != 0, now); });
  PublishLocked(
      {0, now, mask ? "node-unhealthy" : "node-healthy", "", std::string(node),
       absl::StrCat(HealthSourceName(source), bad ? ": " : " cleared", bad ? reason : "")});
  PublishReplan(events, node);
  return absl::OkStatus();
}

absl::Status DaemonState::SetAdminDrain(absl::string_view node, bool drained,
                                        absl::string_view reason) {
  if (absl::Status s = SetNodeHealth(node, HealthSource::kAdminDrain, drained, reason); !s.ok()) {
    return s;
  }
  std::function<void(const std::string&, bool, const std::string&)> record;
  {
    std::lock_guard<std::mutex> lock(mu_);
    record = drain_recorder_;
  }
  if (record) record(std::string(node), drained, std::string(reason));
  return absl::OkStatus();
}

void DaemonState::SetDrainRecorder(
    std::function<void(const std::string&, bool, const std::string&)> r) {
  std::lock_guard<std::mutex> lock(mu_);
  drain_recorder_ = std::move(r);
}

absl::Status DaemonState::SetGpuHealth(absl::string_view node, int local_index, bool faulty,
                                       absl::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  const Cluster& c = sched_.cluster();
  int n = c.FindNode(node);
  if (n < 0) return absl::NotFoundError(absl::StrCat("unknown node '", node, "'"));
  if (local_index < 0 || local_index >= c.node(n).gpus) {
    return absl::OutOfRangeError(absl::StrCat("node '", node, "' has ", c.node(n).gpus,
                                              " GPUs; no GPU index ", local_index));
  }
  int gpu = c.node(n).gpu_begin + local_index;
  // Remembered by node name and index, so a model rebuilt for a new node set keeps the fault.
  if (faulty) {
    gpu_faults_[std::string(node)].insert(local_index);
  } else if (auto f = gpu_faults_.find(node); f != gpu_faults_.end()) {
    f->second.erase(local_index);
    if (f->second.empty()) gpu_faults_.erase(f);
  }
  if (c.GpuFaulty(gpu) == faulty) return absl::OkStatus();
  absl::Time now = clock_.Now();
  auto events = ApplyHealthLocked(n, [&] { return sched_.SetGpuFaulty(gpu, faulty, now); });
  PublishLocked({0, now, faulty ? "gpu-unhealthy" : "gpu-healthy", "", std::string(node),
                 absl::StrCat("gpu ", local_index, faulty ? ": " : "", faulty ? reason : "")});
  PublishReplan(events, node);
  return absl::OkStatus();
}

void DaemonState::ReplaceScheduler(GangScheduler scheduler) {
  std::lock_guard<std::mutex> lock(mu_);
  sched_ = std::move(scheduler);
  absl::Time now = clock_.Now();
  for (const auto& [name, mask] : node_sources_) {
    if (mask == 0) continue;
    int n = sched_.cluster().FindNode(name);
    if (n >= 0) (void)sched_.SetNodeCordoned(n, true, now);
  }
  for (const auto& [name, gpus] : gpu_faults_) {
    int n = sched_.cluster().FindNode(name);
    if (n < 0) continue;
    for (int i : gpus) {
      if (i < sched_.cluster().node(n).gpus) {
        (void)sched_.SetGpuFaulty(sched_.cluster().node(n).gpu_begin + i, true, now);
      }
    }
  }
  RebuildSparesLocked();  // node indexes of the old model are void
}

uint8_t DaemonState::NodeHealthSources(absl::string_view node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = node_sources_.find(node);
  return it == node_sources_.end() ? 0 : it->second;
}

std::string DaemonState::NodeHealthReason(absl::string_view node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = node_reason_.find(node);
  return it == node_reason_.end() ? "" : it->second;
}

DaemonState::HealthCounts DaemonState::CountHealth() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Cluster& c = sched_.cluster();
  HealthCounts h;
  for (const auto& [name, mask] : node_sources_) {
    if (mask == 0 || c.FindNode(name) < 0) continue;
    constexpr uint8_t kDown = static_cast<uint8_t>(HealthSource::kKubeNotReady) |
                              static_cast<uint8_t>(HealthSource::kAgentLost);
    ++((mask & kDown) ? h.nodes_unhealthy : h.nodes_cordoned);
  }
  h.nodes_healthy = c.num_nodes() - h.nodes_unhealthy - h.nodes_cordoned;
  h.gpus_free = c.FreeHealthy(0);
  h.gpus_allocated = c.num_gpus() - static_cast<int>(c.free_mask().Count());
  h.gpus_unhealthy = c.num_gpus() - h.gpus_free - h.gpus_allocated;
  return h;
}

void DaemonState::SetDecisionLogger(std::function<void(const DecisionEvent&)> logger) {
  std::lock_guard<std::mutex> lock(mu_);
  logger_ = std::move(logger);
}

void DaemonState::SetEventObserver(std::function<void(const DecisionEvent&)> observer) {
  std::lock_guard<std::mutex> lock(mu_);
  observer_ = std::move(observer);
}

void DaemonState::PublishReplan(const std::vector<ReplanEvent>& events, absl::string_view node) {
  for (const ReplanEvent& e : events) {
    PublishLocked({0, clock_.Now(), ReplanKindName(e.kind), e.gang, std::string(node), e.detail});
  }
}

int64_t DaemonState::Publish(DecisionEvent e) {
  std::lock_guard<std::mutex> lock(mu_);
  PublishLocked(std::move(e));
  return next_seq_ - 1;
}

void DaemonState::PublishLocked(DecisionEvent e) {
  e.seq = next_seq_++;
  if (e.time == absl::Time()) e.time = clock_.Now();
  if (observer_) observer_(e);
  if (logger_) logger_(e);
  events_.push_back(std::move(e));
  while (events_.size() > event_capacity_) events_.pop_front();
  cv_.notify_all();
}

std::vector<DecisionEvent> DaemonState::WaitEvents(int64_t after, absl::Time deadline, size_t max) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return shutdown_ || (!events_.empty() && events_.back().seq > after); };
  while (!ready()) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    cv_.wait_for(lock, absl::ToChronoNanoseconds(left));
  }
  std::vector<DecisionEvent> out;
  for (const DecisionEvent& e : events_) {
    if (e.seq > after) {
      out.push_back(e);
      if (out.size() >= max) break;
    }
  }
  return out;
}

int64_t DaemonState::LastSeq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_ - 1;
}

void DaemonState::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

}  // namespace topogang
