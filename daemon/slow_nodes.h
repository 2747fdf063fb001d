// The daemon's per-node slowness book: the core's NodeSlowness (scheduler/node_slowness.h) keyed
// by node name instead of model index, so that scores survive model rebuilds (a node relabelled or
// added renumbers the model). Agents feed it (their slowness events); the gang ledger reads it
// (large gangs avoid slow nodes); `topogang explain` shows it. Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "scheduler/node_slowness.h"

namespace topogang {

class SlowNodes {
 public:
  explicit SlowNodes(SlownessOptions options = {}) : book_(options) {}

  void SetOptions(SlownessOptions options);
  // Adds a signal to `node`'s score; true when this report made the node cross the threshold.
  bool Report(const std::string& node, SlownessSignal signal, absl::Time now,
              double magnitude = 1.0);
  double Score(const std::string& node, absl::Time now) const;
  // The nodes at or above the threshold now, sorted by name.
  std::vector<std::string> Slow(absl::Time now) const;
  // "1.50 (correctable-ecc-burst 1.00, clock-throttle 0.50)"; "" when the node has no score.
  std::string Describe(const std::string& node, absl::Time now) const;
  SlownessOptions options() const;

 private:
  static constexpr size_t kMaxNodes = 1 << 20;  // bounded whatever agents send
  mutable std::mutex mu_;
  NodeSlowness book_;
  absl::flat_hash_map<std::string, int> ids_;  // node name -> id in book_, never reused
  std::vector<std::string> names_;             // id -> node name
};

}  // namespace topogang
