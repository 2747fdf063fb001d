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

  std::vector<int> Gpus() const;
  std::vector<int> Nodes() const;  // distinct, ascending; released members (node -1) skipped
};

// Fills level, domain, domains_per_level and bandwidth_gbps from `members`.
void SummarizePlacement(const Cluster& cluster, Placement* p);

}  // namespace topogang
