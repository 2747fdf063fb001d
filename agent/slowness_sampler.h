// Turns a GPU's raw counters, sampled now and then, into slowness events (GpuEventKind
// kEccCorrectableBurst, kLinkReplay, kClockThrottle): what makes a node slow for collective jobs
// without making it broken (scheduler/node_slowness.h scores them in the daemon). NVML's counters
// only grow, so a burst is a rise over one sample period above a threshold; throttling is a
// state, so it is reported when it starts (and again after it stopped). Pure: the caller passes
// the counters and the time, so this is tested without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "agent/gpu_source.h"

namespace topogang::agent {

struct GpuCounters {
  std::optional<uint64_t> ecc_corrected;  // volatile correctable ECC errors (nullopt: unknown)
  std::optional<uint64_t> replays;        // PCIe + NVLink replays, summed
  bool power_throttled = false;           // SW power cap, HW slowdown or power brake
};

struct SlownessThresholds {
  absl::Duration period = absl::Seconds(60);  // counters are compared once per period
  uint64_t ecc_burst = 10;                    // correctable ECC errors in one period
  uint64_t replay_burst = 100;                // replays in one period
};

class SlownessSampler {
 public:
  explicit SlownessSampler(SlownessThresholds t = {}) : t_(t) {}
  // True when the period since the last sample of `gpu` has passed (or there was none).
  bool Due(int gpu, absl::Time now) const;
  // Takes one sample; returns the events it shows (at most one of each kind).
  std::vector<GpuEventInfo> Sample(int gpu, const GpuCounters& c, absl::Time now);

 private:
  struct Last {
    absl::Time at;
    GpuCounters counters;
  };
  SlownessThresholds t_;
  std::map<int, Last> last_;
};

}  // namespace topogang::agent
