#include "scheduler/repair_quality.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "topology/nvlink_tier.h"

namespace topogang {
namespace {

// Summaries of a placement with its unknown members (node -1) left out.
Placement Known(const Cluster& c, const Placement& p) {
  Placement out;
  for (const MemberPlacement& m : p.members) {
    if (m.node >= 0 && m.node < c.num_nodes()) out.members.push_back(m);
  }
  SummarizePlacement(c, &out);
  return out;
}

long FewestPerDomain(const Cluster& c, const Placement& p, int level) {
  std::map<int, long> per;
  for (const MemberPlacement& m : p.members) {
    per[c.AncestorAt(c.NodeDomain(m.node), level)] += static_cast<long>(m.gpus.size());
  }
  long fewest = std::numeric_limits<long>::max();
  for (const auto& [d, g] : per) fewest = std::min(fewest, g);
  return per.empty() ? -1 : fewest;
}

}  // namespace

std::string RepairAssessment::Why(const Cluster& c) const {
  std::string why;
  auto add = [&why](const std::string& s) { absl::StrAppend(&why, why.empty() ? "" : "; ", s); };
  if (lone_in_nvlink_domain()) {
    add(absl::StrCat("a replacement has only ", fewest_per_nvlink_after,
                     " of the gang's GPUs in its ", c.LevelName(nvlink_level),
                     " (the fewest in one was ", fewest_per_nvlink_before,
                     "): its NICs pace the whole ring"));
  }
  if (thin_level_added >= 0) {
    add(absl::StrCat("it adds a thin side: ", thin_nodes, " node", thin_nodes == 1 ? "" : "s",
                     " in one ", c.LevelName(thin_level_added), " behind ",
                     c.UplinkOversubscription(thin_level_added), ":1 oversubscribed uplinks"));
  }
  if (slower_span()) {
    add(absl::StrCat("its span bandwidth drops from ", bandwidth_before_gbps, " to ",
                     bandwidth_after_gbps, " Gb/s per GPU"));
  }
  return why;
}

RepairAssessment AssessRepair(const Cluster& c, Placement before, const std::vector<int>& lost,
                              const std::vector<MemberPlacement>& replacement) {
  Placement after = before;
  for (size_t i = 0; i < lost.size() && i < replacement.size(); ++i) {
    if (lost[i] >= 0 && lost[i] < static_cast<int>(after.members.size())) {
      after.members[lost[i]] = replacement[i];
    }
  }
  return AssessPlacements(c, before, after);
}

RepairAssessment AssessPlacements(const Cluster& c, const Placement& before,
                                  const Placement& after) {
  const Placement b = Known(c, before), a = Known(c, after);
  RepairAssessment r;
  r.bandwidth_before_gbps = b.bandwidth_gbps;
  r.bandwidth_after_gbps = a.bandwidth_gbps;
  r.nvlink_level = NvlinkDomainLevel(c);
  if (r.nvlink_level >= 0) {
    r.fewest_per_nvlink_before = FewestPerDomain(c, b, r.nvlink_level);
    r.fewest_per_nvlink_after = FewestPerDomain(c, a, r.nvlink_level);
  }
  if (a.thin_level >= 0 && b.thin_level < 0) {
    r.thin_level_added = a.thin_level;
    r.thin_nodes = a.thin_nodes;
  }
  return r;
}

}  // namespace topogang
