// The GPU models a gang may be placed on, one at a time. The planner places a gang on a single
// model unless it may mix them, so whatever reasons about where a gang could go (holds,
// preemption) must try the models in turn, never count them together.
#pragma once

#include <vector>

#include "scheduler/gang.h"
#include "topology/cluster.h"

namespace topogang {

// The model the gang names (none when the cluster has no such model), any mix (kAnySku) when it
// may mix them or the cluster has one model, else each model of the cluster.
std::vector<int> CandidateSkus(const Cluster& c, const GangSpec& gang);

}  // namespace topogang
