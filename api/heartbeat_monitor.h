// Tracks the last sign of life of every node agent and marks nodes whose agent went quiet
// (HealthSource::kAgentLost). Time comes from the DaemonState's Clock, and CheckNow() is public
// so tests drive it with a FakeClock instead of sleeping; the server calls it periodically.
// Only nodes whose agent registered at least once are watched: a cluster without agents is not
// "lost".
#pragma once

#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "daemon/daemon_state.h"

namespace topogang {

class HeartbeatMonitor {
 public:
  HeartbeatMonitor(DaemonState& state, absl::Duration window) : state_(state), window_(window) {}

  // A register, heartbeat or event from the node's agent. Clears agent-lost if it was set.
  void Seen(absl::string_view node);
  // Marks every watched node silent for longer than the window; returns how many it marked.
  int CheckNow();

  absl::Duration window() const { return window_; }
  bool Watched(absl::string_view node) const;
  bool Lost(absl::string_view node) const;
  size_t size() const;

 private:
  struct Entry {
    absl::Time last_seen;
    bool lost = false;
  };
  DaemonState& state_;
  const absl::Duration window_;
  // Held across SetNodeHealth so a concurrent Seen/CheckNow cannot apply their flips out of
  // order (lock order: monitor, then DaemonState; DaemonState never calls back).
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> nodes_;
};

}  // namespace topogang
