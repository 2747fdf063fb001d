#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"
#include "scheduler/node_mask.h"
#include "scheduler/repair_quality.h"
#include "scheduler/replacement.h"

namespace topogang {
namespace {

// The placement the gang ran on before it lost `lost` members, which ran on `old_nodes`.
// Nullopt when a lost member's node is unknown (it was lost before this daemon started): its
// replacement may be where it was, so the repair is not judged.
std::optional<Placement> RanBefore(const Cluster& c, const GangRecord& rec,
                                   const std::vector<int>& lost,
                                   const std::vector<int>& old_nodes) {
  Placement before = rec.placement;
  const int g = rec.spec.gpus_per_member;
  if (old_nodes.size() != lost.size()) return std::nullopt;
  for (size_t k = 0; k < lost.size(); ++k) {
    const int n = old_nodes[k];
    if (n < 0 || n >= c.num_nodes() || c.node(n).gpus < g) return std::nullopt;
    MemberPlacement& m = before.members[lost[k]];
    m.node = n;
    m.gpus.clear();  // which of its GPUs does not matter here, only how many sit where
    for (int i = 0; i < g; ++i) m.gpus.push_back(c.node(n).gpu_begin + i);
  }
  return before;
}

// Why replacing the `lost` members of `before` with `replacement` leaves the gang slower than
// it ran (scheduler/repair_quality.h), or "".
std::string SlowerAfterRepair(const Cluster& c, const Placement& before,
                              const std::vector<int>& lost,
                              const std::vector<MemberPlacement>& replacement) {
  const RepairAssessment a = AssessRepair(c, before, lost, replacement);
  return a.Degraded() ? a.Why(c) : "";
}

// Whether the gang on `now` runs as fast as it did on `before`, the same members with some
// moved. False when the two do not describe the same members.
bool RunsAsFastAs(const Cluster& c, const Placement& before, const Placement& now) {
  if (before.members.empty() || before.members.size() != now.members.size()) return false;
  for (size_t i = 0; i < now.members.size(); ++i) {
    if (before.members[i].node < 0 || now.members[i].node < 0) return false;
  }
  return !AssessPlacements(c, before, now).Degraded();
}

}  // namespace

std::optional<std::string> GangLedger::AdoptIntoGangLocked(const PodInfo& pod,
                                                           const GangMembership& gang,
                                                           std::optional<std::string>* error) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  GangSpec spec = gang.ToSpec(static_cast<int>(pod.gpus));
  spec.priority = pod.priority;    // a running gang's priority decides whether it may be preempted
  SetRuntimeEstimate(pod, &spec);  // when its nodes should be free again
  const std::string& id = spec.name;
  auto it = gangs_.find(id);
  if (it != gangs_.end()) {
    Entry& e = it->second;
    const GangSpec& have = e.spec;
    if (!e.adopted) {
      return absl::StrCat("gang ", id, " is already tracked as one topogang placed itself");
    }
    if (have.members != spec.members || have.gpus_per_member != spec.gpus_per_member ||
        have.required_tier != spec.required_tier || have.slice.members != spec.slice.members ||
        have.slice.tier != spec.slice.tier) {
      return absl::StrCat("pod says gang ", id, " is ", spec.members, " pods x ",
                          spec.gpus_per_member, " GPUs, but its bound members say ", have.members,
                          " pods x ", have.gpus_per_member, " GPUs (or another tier/slice)");
    }
    if (e.binding) return absl::StrCat("gang ", id, " is binding its missing members right now");
    if (!e.running) {
      // Missing members hold reservations, but this pod was bound elsewhere: the API server
      // wins; give the reservations back and let the others filter again.
      FailList fails;
      ShrinkToBoundLocked(id,
                          absl::StrCat("topogang: a member of gang ", id,
                                       " was bound outside topogang; filter again"),
                          &fails);
      if (!fails.empty()) {
        auto shared = std::make_shared<FailList>(std::move(fails));
        Enqueue([shared] { RunFails(*shared); });
      }
      it = gangs_.find(id);
      if (it == gangs_.end()) return AdoptIntoGangLocked(pod, gang, error);
    }
  }
  int slot = 0;
  if (it != gangs_.end()) {
    const std::vector<Member>& slots = it->second.slots;
    while (slot < static_cast<int>(slots.size()) && slots[slot].assigned) ++slot;
    if (slot == static_cast<int>(slots.size())) {
      return absl::StrCat("gang ", id, " already has ", slots.size(), " bound pods");
    }
  }
  auto placed = TakeBoundGpusLocked(pod);
  if (!placed.ok()) {
    *error = std::string(placed.status().message());
    return std::nullopt;
  }
  absl::Status st = state_.With([&](GangScheduler& s) -> absl::Status {
    if (it == gangs_.end()) {
      Placement p;
      p.members.push_back(*placed);
      return s.Adopt(spec, std::move(p), GangState::kRunning, state_.clock().Now(),
                     /*require_healthy=*/false);
    }
    return s.AdoptMember(id, slot, *placed, /*require_healthy=*/false);
  });
  if (!st.ok()) {
    *error = std::string(st.message());
    return std::nullopt;
  }
  if (it == gangs_.end()) {
    Entry e;
    e.spec = spec;
    e.multi = true;
    e.adopted = true;
    e.running = true;
    e.slots.resize(spec.members);
    it = gangs_.emplace(id, std::move(e)).first;
  }
  Member& mem = it->second.slots[slot];
  mem.lost_node.clear();  // replaced
  mem.key = key;
  mem.assigned = mem.bound = true;
  mem.pod = {pod.name, pod.namespace_, pod.uid, pod.node_name};
  by_pod_[key] = {id, slot};
  ForgetWaitingPodLocked(key);
  return std::nullopt;
}

std::optional<std::string> GangLedger::AdoptBoundLocked(const PodInfo& pod) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  const std::string id = SingletonGangId(pod.namespace_, pod.name);
  GangResolution m = Resolve(pod);
  const bool multi = m.kind == GangResolution::Kind::kGang && m.gang.size > 1;
  if (multi) {
    std::optional<std::string> error;
    std::optional<std::string> disagree = AdoptIntoGangLocked(pod, m.gang, &error);
    if (!disagree) return error;
    // The pod runs whatever its labels say: adopt it alone, as a member of no gang.
    state_.Publish({0,
                    {},
                    "adopt",
                    m.gang.id,
                    pod.node_name,
                    absl::StrCat("pod ", pod.namespace_, "/", pod.name,
                                 " adopted alone, not into its gang: ", *disagree)});
  }
  auto placed = TakeBoundGpusLocked(pod);
  if (!placed.ok()) return std::string(placed.status().message());
  absl::Status st = state_.With([&](GangScheduler& s) -> absl::Status {
    GangSpec spec;
    spec.name = id;
    spec.gpus_per_member = static_cast<int>(pod.gpus);
    spec.priority = pod.priority;
    SetRuntimeEstimate(pod, &spec);
    Placement p;
    p.members.push_back(*placed);
    return s.Adopt(spec, std::move(p), GangState::kRunning, state_.clock().Now(),
                   /*require_healthy=*/false);
  });
  if (!st.ok()) return std::string(st.message());
  Entry e;
  e.spec.name = id;
  e.spec.gpus_per_member = static_cast<int>(pod.gpus);
  e.spec.priority = pod.priority;
  SetRuntimeEstimate(pod, &e.spec);
  e.multi = multi;
  e.running = true;
  Member mem;
  mem.key = key;
  mem.assigned = mem.bound = true;
  mem.pod = {pod.name, pod.namespace_, pod.uid, pod.node_name};
  e.slots.push_back(std::move(mem));
  gangs_[id] = std::move(e);
  by_pod_[key] = {id, 0};
  ForgetWaitingPodLocked(key);
  return std::nullopt;
}

absl::Status GangLedger::ReserveMissingLocked(const std::string& id, Entry& e,
                                              const std::vector<std::string>& offered,
                                              std::vector<GangNotice>* notices) {
  std::vector<int> missing;
  std::vector<std::pair<std::string, std::string>> spares_taken;  // (spare, lost node)
  std::map<int, int> placed;  // lost member -> the node its replacement takes
  std::string slower;         // why the repair leaves the gang slower than it ran, if it does
  bool restored = false;      // ... or puts a gang marked slower back as fast as before that mark
  absl::Time now = state_.clock().Now();
  absl::Status st = state_.WithSpares([&](GangScheduler& s, const SparePool& pool) -> absl::Status {
    const GangRecord* rec = s.Find(id);
    if (rec == nullptr) return absl::InternalError("the gang's running members are not recorded");
    // The nodes not offered are hidden while the missing members are planned.
    NodeMask hidden(s, NodesNotOffered(s.cluster(), offered));
    const auto& members = rec->placement.members;
    const int recorded = static_cast<int>(members.size());
    // Members lost from a running gang are empty slots of its record; members that never ran (a
    // gang regrouped mid-bind) are beyond its end and are appended in order.
    std::vector<int> lost, beyond;
    std::optional<Placement> ran_before;  // where the lost members ran, when known
    ReplacementOptions options;
    options.spares = &pool;
    for (int i = 0; i < static_cast<int>(e.slots.size()); ++i) {
      if (e.slots[i].assigned) continue;
      if (i < recorded && members[i].node >= 0) continue;  // reserved
      missing.push_back(i);
      if (i < recorded) {
        lost.push_back(i);
        // Released with its pod, so the record no longer says where it was; the slot does.
        options.old_nodes.push_back(s.cluster().FindNode(e.slots[i].lost_node));
      } else {
        beyond.push_back(i);
      }
    }
    if (missing.empty()) return absl::OkStatus();
    std::vector<int> adopted;
    auto undo = [&] {
      for (int m : adopted) s.ReleaseMember(id, m).IgnoreError();
    };
    if (!lost.empty()) {
      // Slices and the required tier kept; a spare of the lost node's domain first, ordinary
      // capacity (spares hidden) for the rest.
      auto r = ProposeReplacement(s, id, lost, options);
      if (!r.ok()) return r.status();
      ran_before = RanBefore(s.cluster(), *rec, lost, options.old_nodes);
      if (ran_before) slower = SlowerAfterRepair(s.cluster(), *ran_before, lost, *r);
      for (size_t k = 0; k < lost.size(); ++k) {
        if (absl::Status a = s.AdoptMember(id, lost[k], (*r)[k]); !a.ok()) {
          undo();
          return a;
        }
        adopted.push_back(lost[k]);
        placed[lost[k]] = (*r)[k].node;
      }
    }
    if (!beyond.empty()) {
      std::vector<int> anchors;
      for (const MemberPlacement& mp : s.Find(id)->placement.members) {
        if (mp.node >= 0) anchors.push_back(mp.node);
      }
      absl::StatusOr<std::vector<MemberPlacement>> r;
      {
        SpareMask hidden(s, pool);  // never ran: ordinary work, not a replacement
        r = s.planner().PlanNear(e.spec, static_cast<int>(beyond.size()), anchors);
      }
      if (!r.ok() || r->size() != beyond.size()) {
        undo();
        return r.ok() ? absl::InternalError("planner returned too few") : r.status();
      }
      for (size_t k = 0; k < beyond.size(); ++k) {
        if (absl::Status a = s.AdoptMember(id, beyond[k], (*r)[k]); !a.ok()) {
          undo();
          return a;
        }
        adopted.push_back(beyond[k]);
      }
    }
    for (int m : lost) {
      const int n = placed[m];
      if (n >= 0 && pool.IsSpare(n)) {
        const std::string& from = e.slots[m].lost_node;
        spares_taken.emplace_back(s.cluster().node(n).name, from.empty() ? "?" : from);
      }
    }
    // The whole repair stood: mark the gang, or clear a mark this repair undid.
    if (!slower.empty()) {
      (void)s.MarkSlowerSinceRepair(id, slower, *ran_before);
    } else if (!lost.empty()) {
      const GangRecord* after = s.Find(id);
      if (after != nullptr && !after->slower_since_repair.empty() &&
          RunsAsFastAs(s.cluster(), after->ran_before_slower, after->placement)) {
        restored = s.ClearSlowerSinceRepair(id).ok();
      }
    }
    return absl::OkStatus();
  });
  if (st.ok()) refused_repairs_.erase(id);
  if (!st.ok() || missing.empty()) return st;
  e.running = false;
  e.fill_deadline = now + state_.With([](GangScheduler& s) { return s.options().reservation_ttl; });
  fills_.insert(id);
  state_.Publish({0,
                  {},
                  "reserve",
                  id,
                  "",
                  absl::StrCat(missing.size(), "x", e.spec.gpus_per_member,
                               " GPUs for the missing members of a gang found partly bound")});
  // Events go on a running member's pod (a replacement has no pod in its slot yet).
  const Member* on = nullptr;
  for (const Member& m : e.slots) {
    if (m.bound && !m.pod.pod_name.empty()) {
      on = &m;
      break;
    }
  }
  // Each goes to the decision log and, as a Kubernetes Event, on that pod.
  auto announce = [&](const char* kind, const std::string& node, const char* type,
                      const char* reason, const std::string& what) {
    state_.Publish({0, {}, kind, id, node, what});
    if (on != nullptr) {
      notices->push_back({type, reason, id, absl::StrCat("topogang: ", what), {on->pod}});
    }
  };
  if (!slower.empty()) {
    // The gang keeps running, slower; only its controller can restart it re-planned whole.
    announce("repair-degraded", "", "Warning", "RepairDegraded",
             absl::StrCat("gang ", id, " was repaired, but runs slower than before: ", slower,
                          ". Restarting it re-plans it whole"));
  }
  if (restored) {
    announce("repair-restored", "", "Normal", "RepairRestored",
             absl::StrCat("gang ", id,
                          " was repaired and runs as fast again as before the repair that "
                          "slowed it"));
  }
  if (!spares_taken.empty()) {
    for (const auto& [spare, lost] : spares_taken) {
      announce("spare-taken", spare, "Normal", "SpareTaken",
               absl::StrCat("spare node ", spare, " replaced node ", lost, " for gang ", id));
    }
    // The domain gets a fresh spare if it has an idle node (a marked one stays, now busy).
    state_.RebuildSpares();
  }
  return absl::OkStatus();
}

void GangLedger::ShrinkToBoundLocked(const std::string& id, const std::string& why,
                                     FailList* fail) {
  auto it = gangs_.find(id);
  if (it == gangs_.end() || !it->second.adopted) return;
  Entry& e = it->second;
  bool any_running = false;
  state_.With([&](GangScheduler& s) {
    const GangRecord* rec = s.Find(id);
    const int size = rec == nullptr ? 0 : static_cast<int>(rec->placement.members.size());
    for (int i = 0; i < static_cast<int>(e.slots.size()); ++i) {
      Member& m = e.slots[i];
      if (m.bound) {
        any_running = true;
        continue;
      }
      if (m.held) fail->emplace_back(std::move(m.held), why);
      if (m.assigned) by_pod_.erase(m.key);
      std::string lost = std::move(m.lost_node);  // its next replacement still wants the spare
      m = Member{};
      m.lost_node = std::move(lost);
      if (i < size && rec->placement.members[i].node >= 0) s.ReleaseMember(id, i).IgnoreError();
    }
    return 0;
  });
  e.running = true;
  e.binding = false;
  e.fill_deadline.reset();
  fills_.erase(id);
  if (!any_running) {
    DropEntryLocked(id, why, /*release_core=*/true, fail);
    state_.Publish({0, {}, "release", id, "", "no member pod of the gang is running"});
  }
}

void GangLedger::ExpireFillsLocked(FailList* fail) {
  absl::Time now = state_.clock().Now();
  for (auto f = fills_.begin(); f != fills_.end();) {
    const std::string id = *f++;
    auto it = gangs_.find(id);
    if (it == gangs_.end() || it->second.running || !it->second.fill_deadline) {
      fills_.erase(id);
      continue;
    }
    const Entry& e = it->second;
    // Members waiting at bind keep the reservation; the barrier answers them on its own.
    if (e.binding || barriers_.contains(id) || *e.fill_deadline > now) continue;
    ShrinkToBoundLocked(id,
                        absl::StrCat("topogang: the missing members of gang ", id,
                                     " did not reach bind before their reservation expired"),
                        fail);
    state_.Publish({0, {}, "expire", id, "", "missing members' reservation TTL passed"});
  }
}

}  // namespace topogang
