#include "api/heartbeat_monitor.h"

#include "absl/strings/str_cat.h"

namespace topogang {

void HeartbeatMonitor::Seen(absl::string_view node) {
  const absl::Time now = state_.clock().Now();
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = nodes_[std::string(node)];
  e.last_seen = now;
  if (e.lost) {
    e.lost = false;
    (void)state_.SetNodeHealth(node, HealthSource::kAgentLost, false, "agent is back");
  }
}

int HeartbeatMonitor::CheckNow() {
  const absl::Time now = state_.clock().Now();
  std::lock_guard<std::mutex> lock(mu_);
  int marked = 0;
  for (auto& [node, e] : nodes_) {
    if (e.lost || now - e.last_seen <= window_) continue;
    e.lost = true;
    ++marked;
    (void)state_.SetNodeHealth(
        node, HealthSource::kAgentLost, true,
        absl::StrCat("no agent heartbeat for ", absl::FormatDuration(now - e.last_seen),
                     " (window ", absl::FormatDuration(window_), ")"));
  }
  return marked;
}

bool HeartbeatMonitor::Watched(absl::string_view node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.contains(node);
}

bool HeartbeatMonitor::Lost(absl::string_view node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  return it != nodes_.end() && it->second.lost;
}

size_t HeartbeatMonitor::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

}  // namespace topogang
