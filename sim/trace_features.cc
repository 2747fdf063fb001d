#include "sim/trace_features.h"

#include <algorithm>
#include <cmath>

#include "sim/rng.h"

namespace topogang::sim {

void AddTraceFeatures(const TraceFeatureOptions& o, Trace* trace) {
  Rng rng(o.seed ^ 0x13f3a7u);  // #13's own stream
  const double hi = std::clamp(o.high_priority_share, 0.0, 1.0);
  const double el = std::clamp(o.elastic_share, 0.0, 1.0);
  const double frac = std::clamp(o.elastic_min_fraction, 0.0, 1.0);
  for (TraceJob& j : trace->jobs) {
    // Both draws for every job, so one share does not change which jobs the other picks.
    const double u_hi = rng.Uniform(), u_el = rng.Uniform();
    if (j.total_gpus() >= o.high_priority_min_gpus && u_hi < hi) j.priority = o.high_priority;
    if (j.members > 1 && j.total_gpus() >= o.elastic_min_gpus && u_el < el) {
      const int min = std::max(1, static_cast<int>(std::ceil(j.members * frac)));
      j.min_members = min < j.members ? min : 0;
    }
  }
  Rng slow(o.seed ^ 0x5100u);
  const double sl = std::clamp(o.slow_node_share, 0.0, 1.0);
  std::vector<NodeEvent> events;
  for (const std::string& node : o.node_names) {
    if (slow.Uniform() >= sl) continue;
    NodeEvent e;
    e.kind = NodeEvent::Kind::kSlow;
    e.node = node;
    events.push_back(std::move(e));
  }
  // At time 0, before every other event (events stay sorted by time).
  trace->events.insert(trace->events.begin(), events.begin(), events.end());
}

}  // namespace topogang::sim
