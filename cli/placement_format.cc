#include "cli/placement_format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace topogang::cli {

std::string CompressNodeList(const Cluster& c, const std::vector<int>& nodes) {
  std::string out;
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += c.node(nodes[i]).name;
    if (j > i) absl::StrAppend(&out, j == i + 1 ? ", " : "..", c.node(nodes[j]).name);
    i = j + 1;
  }
  return out;
}

std::string DescribeSpan(const Cluster& c, const Placement& p) {
  std::string parts;
  for (int l = p.level + 1; l < c.num_levels(); ++l) {
    absl::StrAppend(&parts, parts.empty() ? "" : ", ", p.domains_per_level[l], " ", c.LevelName(l));
  }
  if (parts.empty()) return c.DomainPath(p.domain);
  return absl::StrCat(c.DomainPath(p.domain), " (", parts, ")");
}

nlohmann::json PlacementJson(const Cluster& c, const GangSpec& gang,
                             const absl::StatusOr<Placement>& result) {
  nlohmann::json j;
  j["gang"] = gang.name;
  j["gpus"] = gang.total_gpus();
  j["placed"] = result.ok();
  if (!result.ok()) {
    j["nodes"] = nlohmann::json::array();
    j["tier"] = nullptr;
    j["bandwidth_gbps"] = nullptr;
    j["reason"] = std::string(result.status().message());
    return j;
  }
  const Placement& p = *result;
  nlohmann::json nodes = nlohmann::json::array();
  for (int n : p.Nodes()) nodes.push_back(c.node(n).name);
  j["nodes"] = std::move(nodes);
  j["tier"] = c.LevelName(p.level);
  j["domain"] = c.DomainPath(p.domain);
  nlohmann::json spans = nlohmann::json::object();
  for (int l = 0; l < c.num_levels(); ++l) spans[c.LevelName(l)] = p.domains_per_level[l];
  j["domains_spanned"] = std::move(spans);
  j["bandwidth_gbps"] = p.bandwidth_gbps;
  j["leftover_gpus"] = p.leftover_gpus;
  if (!gang.preferred_tier.empty()) j["preferred_met"] = p.preferred_met;
  nlohmann::json members = nlohmann::json::array();
  for (const MemberPlacement& m : p.members) {
    nlohmann::json gpus = nlohmann::json::array();
    for (int g : m.gpus) gpus.push_back(g - c.node(m.node).gpu_begin);
    members.push_back({{"node", c.node(m.node).name}, {"gpus", std::move(gpus)}});
  }
  j["members"] = std::move(members);
  j["reason"] = "";
  return j;
}

std::string Table::Render() const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i + 1 == row.size()) {
        line += row[i];
      } else {
        absl::StrAppend(&line, row[i], std::string(width[i] - row[i].size() + 2, ' '));
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace topogang::cli
