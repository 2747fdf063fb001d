// SVG charts of simulation results, as strings (the CLI writes them to files).
#pragma once

#include <string>
#include <vector>

#include "sim/metrics.h"

namespace topogang::sim {

// CDF of job completion time per policy, log-scale time axis.
std::string JctCdfSvg(const std::vector<PolicyResult>& results, const std::string& title);

// One panel per policy: every leaf a cell coloured by the share of its GPUs in use at the
// snapshot time (white = idle, dark = full).
std::string OccupancySvg(const std::vector<PolicyResult>& results, const std::string& title);

}  // namespace topogang::sim
