#include "scheduler/gang.h"

#include "absl/strings/str_cat.h"

namespace topogang {

absl::Status ValidateGang(const GangSpec& g) {
  auto bad = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("gang '", g.name, "': ", parts...));
  };
  if (g.name.empty() || g.name.size() > 253) {
    return absl::InvalidArgumentError("gang name must be 1..253 characters");
  }
  if (g.members < 1 || g.members > kMaxGangMembers) {
    return bad("members must be 1..", kMaxGangMembers, ", got ", g.members);
  }
  if (g.gpus_per_member < 1 || g.gpus_per_member > 128) {
    return bad("gpus_per_member must be 1..128, got ", g.gpus_per_member);
  }
  if (g.required_tier_max_wait < absl::ZeroDuration()) {
    return bad("required_tier_max_wait must not be negative");
  }
  if (g.slice.members < 0) return bad("slice members must be >= 0, got ", g.slice.members);
  if (g.slice.members > 0) {
    if (g.slice.tier.empty()) return bad("slice needs a tier");
    if (g.members % g.slice.members != 0) {
      return bad("members (", g.members, ") must be a multiple of the slice size (",
                 g.slice.members, ")");
    }
  }
  return absl::OkStatus();
}

}  // namespace topogang
