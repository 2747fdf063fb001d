#include "agent/slowness_sampler.h"

#include "absl/strings/str_cat.h"

namespace topogang::agent {

bool SlownessSampler::Due(int gpu, absl::Time now) const {
  auto it = last_.find(gpu);
  return it == last_.end() || now - it->second.at >= t_.period;
}

std::vector<GpuEventInfo> SlownessSampler::Sample(int gpu, const GpuCounters& c, absl::Time now) {
  std::vector<GpuEventInfo> out;
  auto it = last_.find(gpu);
  if (it != last_.end()) {
    const GpuCounters& p = it->second.counters;
    // A counter that went down was reset (driver reload, GPU reset): no rise to report.
    if (c.ecc_corrected && p.ecc_corrected && *c.ecc_corrected >= *p.ecc_corrected &&
        *c.ecc_corrected - *p.ecc_corrected >= t_.ecc_burst) {
      out.push_back(
          {gpu, GpuEventKind::kEccCorrectableBurst, 0,
           absl::StrCat(*c.ecc_corrected - *p.ecc_corrected, " correctable ECC errors in ",
                        absl::FormatDuration(now - it->second.at))});
    }
    if (c.replays && p.replays && *c.replays >= *p.replays &&
        *c.replays - *p.replays >= t_.replay_burst) {
      out.push_back({gpu, GpuEventKind::kLinkReplay, 0,
                     absl::StrCat(*c.replays - *p.replays, " NVLink/PCIe replays in ",
                                  absl::FormatDuration(now - it->second.at))});
    }
  }
  const bool was_throttled = it != last_.end() && it->second.counters.power_throttled;
  if (c.power_throttled && !was_throttled) {
    out.push_back({gpu, GpuEventKind::kClockThrottle, 0, "clocks throttled (power)"});
  }
  last_[gpu] = {now, c};
  return out;
}

}  // namespace topogang::agent
