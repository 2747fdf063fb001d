// GangLedger::Resolve: the pod's gang, with the cluster's defaults the pods do not override.
#include "daemon/gang_ledger.h"
#include "scheduler/tier_lapse.h"

namespace topogang {

GangResolution GangLedger::Resolve(const PodInfo& pod) const {
  GangResolution r =
      ResolveGang(pod, lookup_.load(), [this](const std::string& label) -> std::string {
        // A PodGroup's topology key names a node label; the tier built from it is the constraint.
        if (label == "kubernetes.io/hostname") return "node";
        return state_.With([&](GangScheduler& s) -> std::string {
          for (const TierSpec& t : s.cluster().topology().tiers) {
            if (t.label == label) return t.name;
          }
          return "";
        });
      });
  GangMembership& g = r.gang;
  // The annotation's longest wait is 7 days, so an infinite one was not given by the pod.
  if (r.kind != GangResolution::Kind::kGang || g.required_tier.empty() ||
      g.required_tier_max_wait != absl::InfiniteDuration() ||
      options_.required_tier_max_wait.empty()) {
    return r;
  }
  g.required_tier_max_wait = state_.With([&](GangScheduler& s) {
    return ClusterTierWait(s.cluster(), g.required_tier, options_.required_tier_max_wait);
  });
  return r;
}

}  // namespace topogang
