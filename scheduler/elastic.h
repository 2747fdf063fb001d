// Elastic gangs: a gang declares a minimum and a maximum number of members. It starts as soon as
// its minimum fits, and grows toward its maximum as GPUs free up next to it, never across a worse
// tier than the one it started in (a gang that started inside one leaf only grows inside that
// leaf: growing by spanning a spine would slow every step of the members it already has).
//
// The start tier is the narrowest where the minimum fits, but never a single node (a gang whose
// minimum fits on one node grows inside that node's leaf or NVLink domain). The start domain is
// chosen for growth: the largest size k in [min, max] that still fits at the start tier is planned,
// and only its first `min` members are reserved. So among domains of that tier, the gang starts in
// one with room to grow to k, not in the tightest one that holds the minimum (which best fit alone
// would pick). Growth is offered, not forced: the user's controller creates the member pods, which
// are adopted as they bind (Grow). Slices are not supported yet (InvalidArgument).
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/gang.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/placement.h"

namespace topogang {

class ElasticGangs {
 public:
  // Reserves `gang` (gang.members is ignored) with `min_members` members in the start domain
  // described above. ResourceExhausted when the minimum does not fit.
  absl::StatusOr<const GangRecord*> Start(GangScheduler& sched, const GangSpec& gang,
                                          int min_members, int max_members, absl::Time now);

  struct Offer {
    std::vector<MemberPlacement> members;  // where up to max - current more members could go
    int domain = -1;                       // the start domain they stay in
  };
  // Room for more members of `gang` inside its start domain now (possibly none). NotFound when
  // the gang is not an elastic gang the scheduler holds.
  absl::StatusOr<Offer> GrowthOffer(const GangScheduler& sched, absl::string_view gang) const;
  // Adopts the offered members (all-or-nothing as far as the scheduler allows).
  absl::Status Grow(GangScheduler& sched, absl::string_view gang,
                    const std::vector<MemberPlacement>& members);
  void Forget(absl::string_view gang) { gangs_.erase(gang); }
  // The gang's maximum changed (its job was scaled: a PyTorchJob under an autoscaler); never
  // below its minimum. False when the gang is unknown.
  bool SetMaxMembers(absl::string_view gang, int max_members);

  int start_level(absl::string_view gang) const;  // -1 when unknown

 private:
  struct Elastic {
    int min_members = 0, max_members = 0;
    int start_level = 0, start_domain = -1;
  };
  absl::flat_hash_map<std::string, Elastic> gangs_;
};

}  // namespace topogang
