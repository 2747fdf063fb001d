#include "scheduler/job_exclusion.h"

#include <map>

#include "absl/strings/str_format.h"

namespace topogang {

void JobExclusion::AvoidNodes(absl::string_view gang, const std::vector<int>& nodes) {
  PerGang& g = per_gang_[gang];
  g.named.clear();
  g.named.insert(nodes.begin(), nodes.end());
}

void JobExclusion::RecordFailure(absl::string_view gang, int node) {
  if (node >= 0) per_gang_[gang].failed.insert(node);
}

std::vector<std::pair<int, std::string>> JobExclusion::Explain(const GangSpec& gang,
                                                               absl::Time now) const {
  std::map<int, std::string> why;
  auto add = [&](int node, const std::string& reason) {
    std::string& w = why[node];
    w += w.empty() ? reason : "; " + reason;
  };
  if (IsLarge(gang)) {
    for (int n : slowness_.SlowNodes(now)) {
      add(n, absl::StrFormat("slow (score %.2f, gang of %d GPUs >= %d)", slowness_.Score(n, now),
                             gang.total_gpus(), options_.large_gang_gpus));
    }
  }
  if (auto it = per_gang_.find(gang.name); it != per_gang_.end()) {
    for (int n : it->second.named) add(n, "named by the gang");
    for (int n : it->second.failed) add(n, "an earlier attempt failed here");
  }
  return {why.begin(), why.end()};
}

std::vector<int> JobExclusion::Excluded(const GangSpec& gang, absl::Time now) const {
  std::vector<int> nodes;
  for (const auto& [n, reason] : Explain(gang, now)) nodes.push_back(n);
  return nodes;
}

GangQueue::NodeExclusion JobExclusion::ForQueue(absl::Time now) const {
  return [this, now](const GangSpec& gang) { return Excluded(gang, now); };
}

}  // namespace topogang
