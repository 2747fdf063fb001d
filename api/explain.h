// Explain: for a gang spec on the cluster as it is now, what every tier offers, from the node up
// to the whole cluster: how many domains could hold the gang, the best one, and the closest
// rejected domains with their room. Counts members only (Cluster::MemberCapacity); slice and
// cross-SKU rules are left to the planner, whose verdict is reported next to it.
#pragma once

#include "scheduler/gang.h"
#include "topogang/v1/placement.pb.h"
#include "topology/cluster.h"

namespace topogang {

// Fills tiers, would_fit_now, no_fit_reason and spec of `out`. `max_rejected` bounds the
// rejected domains listed per tier.
void ExplainGang(const Cluster& c, const GangSpec& gang, int max_rejected,
                 ::topogang::v1::ExplainResponse* out);

}  // namespace topogang
