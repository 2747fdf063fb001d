#include "scheduler/gang_skus.h"

namespace topogang {

std::vector<int> CandidateSkus(const Cluster& c, const GangSpec& gang) {
  if (!gang.sku.empty()) {
    const int sku = c.FindSku(gang.sku);
    return sku < 0 ? std::vector<int>{} : std::vector<int>{sku};
  }
  if (gang.allow_mixed_sku || c.num_skus() <= 1) return {kAnySku};
  std::vector<int> skus;
  for (int s = 0; s < c.num_skus(); ++s) skus.push_back(s);
  return skus;
}

}  // namespace topogang
