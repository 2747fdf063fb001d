#include "topology/nvlink_tier.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace topogang {

bool IsNvlinkTier(absl::string_view name, absl::string_view label) {
  const std::string n = absl::AsciiStrToLower(name);
  return n == "nvlink" || n == "accelerator" || absl::StrContains(label, "clique") ||
         absl::StrContains(label, "memory_fabric") || absl::StrContains(label, "accelerator");
}

bool IsNvlinkLevel(const Cluster& c, int level) {
  if (level <= 0) return false;
  for (const TierSpec& t : c.topology().tiers) {
    if (t.name == c.LevelName(level)) return IsNvlinkTier(t.name, t.label);
  }
  return false;
}

int NvlinkDomainLevel(const Cluster& c) {
  for (int l = 1; l < c.node_level(); ++l) {
    if (IsNvlinkLevel(c, l)) return l;
  }
  return -1;
}

}  // namespace topogang
