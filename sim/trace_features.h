// Inputs for the policies of issue #13 added to a generated trace: some large gangs made
// high-priority (for preemption), some multi-member gangs made elastic (for elastic gangs), some
// nodes made slow (for slow-node avoidance). Kept apart from the generator, on their own random
// streams, so a seed still gives the same jobs, sizes, arrivals and failures with or without
// them (docs/traces.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace.h"

namespace topogang::sim {

struct TraceFeatureOptions {
  uint64_t seed = 1;
  // Share of the jobs of at least high_priority_min_gpus GPUs given priority `high_priority`
  // (the rest keep theirs): urgent large runs arriving into a busy cluster.
  double high_priority_share = 0;
  long high_priority_min_gpus = 64;
  int high_priority = 100;
  // Share of the multi-member jobs of at least elastic_min_gpus GPUs made elastic: min_members =
  // ceil(members x elastic_min_fraction), members stays the maximum. Elastic training is for
  // multi-node jobs; a gang that fits one node would trade NVLink for room to grow.
  double elastic_share = 0;
  long elastic_min_gpus = 16;
  double elastic_min_fraction = 0.5;
  // Share of `node_names` made slow for the whole trace (@slow rows at time 0, no end): nodes
  // with a degraded link or a throttled GPU that nobody has taken out of service.
  double slow_node_share = 0;
  std::vector<std::string> node_names;
};

// Deterministic in (trace, options). Shares outside [0, 1] are clamped.
void AddTraceFeatures(const TraceFeatureOptions& options, Trace* trace);

}  // namespace topogang::sim
