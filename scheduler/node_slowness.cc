#include "scheduler/node_slowness.h"

#include <algorithm>
#include <cmath>

namespace topogang {

const char* SlownessSignalName(SlownessSignal s) {
  switch (s) {
    case SlownessSignal::kCorrectableEccBurst:
      return "correctable-ecc-burst";
    case SlownessSignal::kLinkReplay:
      return "link-replay";
    case SlownessSignal::kClockThrottle:
      return "clock-throttle";
    case SlownessSignal::kSlowNcclTest:
      return "slow-nccl-test";
  }
  return "?";
}

std::optional<SlownessSignal> SlownessSignalOf(GpuEventKind kind) {
  switch (kind) {
    case GpuEventKind::kEccCorrectableBurst:
      return SlownessSignal::kCorrectableEccBurst;
    case GpuEventKind::kLinkReplay:
      return SlownessSignal::kLinkReplay;
    case GpuEventKind::kThermal:
    case GpuEventKind::kClockThrottle:
      return SlownessSignal::kClockThrottle;
    case GpuEventKind::kSlowNcclTest:
      return SlownessSignal::kSlowNcclTest;
    default:
      return std::nullopt;
  }
}

double NodeSlowness::Decay(absl::Time from, absl::Time to) const {
  if (to <= from || options_.half_life <= absl::ZeroDuration()) return 1.0;
  return std::exp2(-absl::FDivDuration(to - from, options_.half_life));
}

void NodeSlowness::Report(int node, SlownessSignal signal, absl::Time now, double magnitude) {
  auto [it, inserted] = nodes_.try_emplace(node);
  Entry& e = it->second;
  if (inserted) e.at = now;
  // Reports may arrive slightly out of order: decay to the later of the two times only.
  const double f = Decay(e.at, now);
  for (double& s : e.score) s *= f;
  e.at = std::max(e.at, now);
  const int i = static_cast<int>(signal);
  e.score[i] += options_.weight[i] * std::max(0.0, magnitude);
}

std::array<double, kNumSlownessSignals> NodeSlowness::Breakdown(int node, absl::Time now) const {
  std::array<double, kNumSlownessSignals> out{};
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return out;
  const double f = Decay(it->second.at, now);
  for (int i = 0; i < kNumSlownessSignals; ++i) out[i] = it->second.score[i] * f;
  return out;
}

double NodeSlowness::Score(int node, absl::Time now) const {
  double sum = 0;
  for (double s : Breakdown(node, now)) sum += s;
  return sum;
}

std::vector<int> NodeSlowness::SlowNodes(absl::Time now) const {
  std::vector<int> slow;
  for (const auto& [node, e] : nodes_) {
    if (IsSlow(node, now)) slow.push_back(node);
  }
  std::sort(slow.begin(), slow.end());
  return slow;
}

void NodeSlowness::Prune(absl::Time now, double below) {
  absl::erase_if(nodes_, [&](const auto& kv) { return Score(kv.first, now) < below; });
}

}  // namespace topogang
