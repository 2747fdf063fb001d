// Re-planning a waiting gang inside what kube-scheduler offers its pods. A reservation can sit on
// nodes a member is not offered: another gang's queue pass planned it without this gang's offer,
// a node freed moments ago was not yet free in kube-scheduler's cache, a node was cordoned or
// tainted, a model rebuild re-planned it without its offers' exclusions, or the members' own
// constraints disagree. Only the last can repeat without end, so only reservations planned
// inside an offer count against the limit. A pod of no gang is re-planned the same way.
#include "absl/strings/str_cat.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"

namespace topogang {

bool GangLedger::DropForReplanLocked(const std::string& id, bool replanned, FailList* fail) {
  auto it = gangs_.find(id);
  if (it == gangs_.end()) return false;
  const Entry& e = it->second;
  // A pod of no gang too: a model rebuild plans it again without the nodes its offers had
  // excluded (they index the old model), and steered to a node it is not offered it was refused
  // as unresolvable, parked by kube-scheduler while its reservation ran out.
  if (e.adopted || e.running || e.binding) return false;
  for (const Member& m : e.slots) {
    if (m.bound) return false;
  }
  if (e.planned_in_offer) {
    // Members whose constraints disagree would move the gang back and forth: a few re-plans,
    // then the filter says why it cannot be placed.
    if (replans_.size() > 10000) replans_.clear();
    const absl::Time now = state_.clock().Now();
    Replans& r = replans_[id];
    if (now - r.last > kReplanMemory) r.count = 0;
    if (r.count >= kMaxReplans) return false;
    ++r.count;
    r.last = now;
  } else if (replanned) {
    return false;  // planned inside this offer already, once: no second try in the same call
  }
  DropEntryLocked(id,
                  absl::StrCat("topogang: gang ", id,
                               " was planned again inside the nodes kube-scheduler offers its "
                               "pods; this pod will be scheduled again"),
                  /*release_core=*/true, fail);
  state_.Publish({0,
                  {},
                  "replan",
                  id,
                  "",
                  "reservation was on nodes kube-scheduler did not offer a member (its "
                  "selectors, affinity, taints or resources); planned again inside them"});
  return true;
}

}  // namespace topogang
