// Where a gang's members go, and what that placement is worth.
#pragma once

#include <vector>

#include "topology/cluster.h"

namespace topogang {

struct MemberPlacement {
  int node = -1;
  std::vector<int> gpus;  // global GPU indices (node-local index = gpu - node.gpu_begin)
};

struct Placement {
  std::vector<MemberPlacement> members;  // index = member ordinal
  int level = 0;   // level of the lowest domain holding every member (the tier spanned)
  int domain = 0;  // that domain
  std::vector<int> domains_per_level;  // distinct domains touched, per level
  double bandwidth_gbps = 0;           // estimated all-reduce bus bandwidth per GPU
  int leftover_gpus = 0;  // free healthy GPUs the chosen domain keeps after this placement
  bool preferred_met = true;
  // A thin side: the gang's ring leaves a switch domain (below its span, above the nodes) whose
  // share of its oversubscribed uplinks (the gang's GPUs there / the oversubscription) is less
  // than the NICs of the gang's smallest node carry (its GPUs there): with full nodes, fewer
  // nodes than the oversubscription. The whole all-reduce then runs at that domain's pace
  // (docs/network-model.md: a 15 + 1 split across a 2:1 tier runs at half the speed of 8 + 8,
  // which the span bandwidth above does not show).
  // thin_level is that domain's level (the lowest such), -1 when none; thin_nodes its nodes.
  int thin_level = -1;
  int thin_nodes = 0;

  std::vector<int> Gpus() const;
  std::vector<int> Nodes() const;  // distinct, ascending; released members (node -1) skipped
};

// Fills level, domain, domains_per_level, bandwidth_gbps and the thin side from `members`.
void SummarizePlacement(const Cluster& cluster, Placement* p);

}  // namespace topogang
