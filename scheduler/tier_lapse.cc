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

}  // namespace topogang
