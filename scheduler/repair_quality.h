// Whether replacing a running gang's lost members leaves it slower than it ran.
//
// A repair puts each lost member on the nearest free GPUs (scheduler/replacement.h). That keeps
// the gang running, but it can slow the whole gang for the rest of its run, and the planner's
// span bandwidth does not show it when the gang already spans the cluster:
//   - a replacement alone in an NVLink domain (one tray in a rack of another leaf): between
//     domains the ring runs over each domain's NICs, so that tray's few NICs pace everybody
//     (docs/placement-quality.md, "Repairs that leave a lone tray");
//   - a thin side where there was none (Placement::thin_level: 15 + 1 nodes across 2:1
//     uplinks run at half the speed of 8 + 8);
//   - a lower span bandwidth (a member moved beyond the gang's switch).
// The simulator restarts such a gang; the daemon cannot (its training controller owns the
// pods), so it reports it. Both ask this one check.
#pragma once

#include <string>
#include <vector>

#include "scheduler/placement.h"
#include "topology/cluster.h"

namespace topogang {

struct RepairAssessment {
  double bandwidth_before_gbps = 0, bandwidth_after_gbps = 0;
  // The fewest of the gang's GPUs in one NVLink domain it uses, before and after; -1 when the
  // cluster has no NVLink tier.
  long fewest_per_nvlink_before = -1, fewest_per_nvlink_after = -1;
  int nvlink_level = -1;
  // The thin side the repair added (Placement::thin_level, -1: none added).
  int thin_level_added = -1;
  int thin_nodes = 0;

  bool lone_in_nvlink_domain() const {
    return fewest_per_nvlink_after >= 0 && fewest_per_nvlink_after < fewest_per_nvlink_before;
  }
  bool slower_span() const { return bandwidth_after_gbps < bandwidth_before_gbps; }
  bool Degraded() const {
    return lone_in_nvlink_domain() || thin_level_added >= 0 || slower_span();
  }
  // One sentence per way it is slower, for events and logs; empty when not degraded.
  std::string Why(const Cluster& c) const;
};

// `before`: the gang's members where they ran, the lost ones included (a member whose node is
// unknown, -1, is left out of both sides). `lost[i]` is replaced by `replacement[i]`. The
// placements' summaries (SummarizePlacement) are computed here; their inputs may be stale.
RepairAssessment AssessRepair(const Cluster& c, Placement before, const std::vector<int>& lost,
                              const std::vector<MemberPlacement>& replacement);
// The same check between any two placements of the gang's members: whether it runs slower on
// `after` than on `before` (a later repair judged against where it ran before an earlier one).
RepairAssessment AssessPlacements(const Cluster& c, const Placement& before,
                                  const Placement& after);

}  // namespace topogang
