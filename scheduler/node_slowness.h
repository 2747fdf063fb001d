// A per-node slowness score from signals that make a node slow for collective jobs without making
// it broken: a burst of correctable ECC errors, NVLink or PCIe replay counters rising, clocks
// throttled for thermal or power reasons, a slow NCCL self-test. Health (cordon, GPU faults) says
// "do not use"; slowness says "large synchronous jobs should not use it", because one slow rank
// paces every step of an all-reduce while a small job barely notices (JobExclusion decides).
//
// Each signal adds weight x magnitude to the node's score, and the score halves every half_life:
// a node that stops misbehaving comes back on its own, one that keeps misbehaving stays above the
// threshold. Pure: callers pass the time in.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "common/gpu_event_kind.h"

namespace topogang {

enum class SlownessSignal {
  kCorrectableEccBurst,
  kLinkReplay,     // NVLink or PCIe replay counters rising
  kClockThrottle,  // thermal or power throttling
  kSlowNcclTest,   // the agent's NCCL self-test below its expected bus bandwidth
};
inline constexpr int kNumSlownessSignals = 4;
const char* SlownessSignalName(SlownessSignal s);
// The slowness signal an agent's GPU event carries (a thermal event throttles clocks); nullopt
// for events that say nothing about speed (XIDs, faults, recovery).
std::optional<SlownessSignal> SlownessSignalOf(GpuEventKind kind);

struct SlownessOptions {
  absl::Duration half_life = absl::Minutes(30);
  // Score added per unit of magnitude, by signal. With threshold 1: two ECC bursts, replays or
  // throttle reports in a short time, or one slow self-test, make a node slow.
  std::array<double, kNumSlownessSignals> weight = {0.5, 0.5, 0.5, 1.0};
  double threshold = 1.0;  // a node scoring at least this is slow
};

class NodeSlowness {
 public:
  explicit NodeSlowness(SlownessOptions options = {}) : options_(options) {}

  // `magnitude` scales the signal (1 = one report at the agent's own trigger level).
  void Report(int node, SlownessSignal signal, absl::Time now, double magnitude = 1.0);
  double Score(int node, absl::Time now) const;
  // The decayed contribution of each signal to Score (for `topogang explain`).
  std::array<double, kNumSlownessSignals> Breakdown(int node, absl::Time now) const;
  bool IsSlow(int node, absl::Time now) const { return Score(node, now) >= options_.threshold; }
  std::vector<int> SlowNodes(absl::Time now) const;  // ascending
  // Forgets the node (it was repaired or replaced).
  void Forget(int node) { nodes_.erase(node); }
  // Drops nodes whose score decayed to almost nothing, so memory follows the misbehaving nodes.
  void Prune(absl::Time now, double below = 1e-3);
  const SlownessOptions& options() const { return options_; }

 private:
  struct Entry {
    std::array<double, kNumSlownessSignals> score{};  // decayed to `at`
    absl::Time at;
  };
  double Decay(absl::Time from, absl::Time to) const;

  SlownessOptions options_;
  absl::flat_hash_map<int, Entry> nodes_;
};

}  // namespace topogang
