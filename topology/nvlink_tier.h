// Which tiers of a cluster are NVLink domains: traffic inside one never touches a NIC, so a
// gang's GPUs in one domain talk at NVLink speed and the domain's NICs carry everything else.
// The network model prices rings by it (sim/network_model.h) and the repair check uses it to
// spot a replacement left alone in a rack (scheduler/repair_quality.h).
#pragma once

#include "absl/strings/string_view.h"
#include "topology/cluster.h"

namespace topogang {

// Tiers named "nvlink"/"accelerator", or labelled with the GPU clique / memory-fabric id
// (topology/label_family.h names those labels).
bool IsNvlinkTier(absl::string_view name, absl::string_view label);
// The same for a level of `c` (false for the cluster root, a node, or no such level).
bool IsNvlinkLevel(const Cluster& c, int level);
// The widest NVLink level of `c` above its nodes, or -1 when it has none.
int NvlinkDomainLevel(const Cluster& c);

}  // namespace topogang
