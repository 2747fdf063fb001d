// CSV renderings of simulation results (the CLI writes them under --out).
#pragma once

#include <string>
#include <vector>

#include "sim/metrics.h"

namespace topogang::sim {

// One row per policy; columns documented in docs/placement-quality.md#metrics.
std::string SummaryCsv(const std::vector<PolicyResult>& results);
// One row per job of one policy.
std::string JobsCsv(const PolicyResult& result, const Cluster& cluster);

}  // namespace topogang::sim
