#include "scheduler/tier_lapse.h"

#include <utility>

namespace topogang {

bool TierLapsed(const Cluster& c, const GangSpec& gang, absl::Duration waited) {
  return !gang.required_tier.empty() && c.LevelByName(gang.required_tier) >= 0 &&
         waited >= gang.required_tier_max_wait;
}

GangSpec LapseRequiredTier(const Cluster& c, GangSpec gang) {
  if (gang.preferred_tier.empty() ||
      c.LevelByName(gang.preferred_tier) < c.LevelByName(gang.required_tier)) {
    gang.preferred_tier = gang.required_tier;
  }
  gang.required_tier.clear();
  return gang;
}

absl::Duration ClusterTierWait(const Cluster& c, const std::string& required_tier,
                               const std::map<std::string, absl::Duration>& wait_by_tier) {
  const int level = required_tier.empty() ? -1 : c.LevelByName(required_tier);
  absl::Duration wait = absl::InfiniteDuration();
  for (const auto& [tier, w] : wait_by_tier) {
    if (level >= 0 && c.LevelByName(tier) == level) wait = w;
  }
  return wait;
}

}  // namespace topogang
