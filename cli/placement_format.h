// Human and JSON renderings of placements, shared by dry-run, explain and simulate output.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/gang.h"
#include "scheduler/placement.h"
#include "topology/cluster.h"

namespace topogang::cli {

// "gpu-0000..gpu-0015, gpu-0040" (runs of consecutive nodes in topology order).
std::string CompressNodeList(const Cluster& c, const std::vector<int>& nodes);
// "leaf zone0/spine1/leaf3 (1 leaf, 16 nodes)" style summary of what the placement spans.
std::string DescribeSpan(const Cluster& c, const Placement& p);
nlohmann::json PlacementJson(const Cluster& c, const GangSpec& gang,
                             const absl::StatusOr<Placement>& result);

// Fixed-width table printer: columns sized to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace topogang::cli
