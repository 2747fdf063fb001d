// The order in which a gang's members should take ranks (torchrun's RANK / NODE_RANK, an MPI
// rank): by node, then by GPU. Nodes are numbered in label-path order (topology/cluster.h), so
// this one sort groups the members by node, NVLink domain, leaf, spine and island at once: a ring
// over the ranks in this order enters and leaves every domain once, the fewest uplink crossings
// any order can have (docs/network-model.md prices the alternatives).
//
// Planner::Plan and Planner::PlanNear already return members in this order. A placement patched
// by GangScheduler::ApplyReplacement keeps each member's ordinal (pods keep their slots), so the
// replaced members sit out of order until the gang restarts: RankOrder says which rank each
// member should take then. The daemon can publish it on each pod (one annotation a launcher
// reads); that wiring lives outside scheduler/.
#pragma once

#include <vector>

#include "scheduler/placement.h"

namespace topogang {

// Member ordinals of `p`, rank 0 first; members released on their own (node -1) come last.
std::vector<int> RankOrder(const Placement& p);

// Reorders `members` into rank order (what a launcher would do on a restart).
void SortByRank(std::vector<MemberPlacement>* members);

}  // namespace topogang
