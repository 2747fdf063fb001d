#include "sim/comm_model.h"

#include <algorithm>

namespace topogang::sim {

int IdealLevel(const Cluster& c, int members, int gpus_per_member) {
  const long total = static_cast<long>(members) * gpus_per_member;
  for (int level = c.node_level(); level > 0; --level) {
    if (level == c.node_level() && members > 1 &&
        static_cast<long>(c.max_gpus_per_node()) < total) {
      continue;
    }
    if (c.MaxDomainGpus(level) >= total) return level;
  }
  return 0;
}

double IdealBandwidthGbps(const Cluster& c, int members, int gpus_per_member) {
  return c.SpanBandwidthGbps(IdealLevel(c, members, gpus_per_member));
}

double Stretch(double f, double ideal_bw, double placement_bw) {
  if (placement_bw <= 0 || ideal_bw <= 0) return 1;
  return std::max(1.0, (1 - f) + f * ideal_bw / placement_bw);
}

}  // namespace topogang::sim
