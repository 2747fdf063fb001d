#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"

namespace topogang {
namespace {

std::string GangLabel(const GangSpec& g, bool multi) {
  if (!multi) return absl::StrCat("pod (", g.gpus_per_member, " GPUs)");
  return absl::StrCat("gang ", g.name, " (", g.members, " pods x ", g.gpus_per_member, " GPUs)");
}

// Best fit for a gang of one among the offered nodes: the node with the fewest free healthy GPUs
// that still holds the pod, so whole nodes stay free for large gangs.
absl::Status ReserveBestOffered(GangScheduler& s, const GangSpec& spec,
                                const std::vector<std::string>& names, absl::Time now) {
  const Cluster& c = s.cluster();
  int best = -1, best_free = 0;
  for (const std::string& name : names) {
    int n = c.FindNode(name);
    if (n < 0) continue;
    int f = c.NodeFreeHealthy(n);
    if (f >= spec.gpus_per_member && (best < 0 || f < best_free)) {
      best = n;
      best_free = f;
    }
  }
  if (best < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no offered node has ", spec.gpus_per_member, " free healthy GPUs"));
  }
  Placement p;
  MemberPlacement m;
  m.node = best;
  const NodeInfo& ni = c.node(best);
  for (int g = ni.gpu_begin;
       g < ni.gpu_begin + ni.gpus && static_cast<int>(m.gpus.size()) < spec.gpus_per_member; ++g) {
    if (c.IsUsable(g)) m.gpus.push_back(g);
  }
  p.members.push_back(std::move(m));
  return s.Adopt(spec, std::move(p), GangState::kReserved, now);
}

FilterDecision FailAll(std::string reason, bool unresolvable) {
  FilterDecision d;
  d.kind = FilterDecision::Kind::kFailAll;
  d.reason = std::move(reason);
  d.unresolvable = unresolvable;
  return d;
}

FilterDecision ErrorResult(const std::string& error) {
  FilterDecision d = FailAll("topogang: " + error, /*unresolvable=*/true);
  d.error = error;
  return d;
}

}  // namespace

void GangLedger::WarnMembership(const PodInfo& pod, const std::string& message) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (warned_.size() > 10000) warned_.clear();
    auto [it, added] = warned_.emplace(key, message);
    if (!added && it->second == message) return;
    it->second = message;
  }
  Notify({"Warning",
          absl::StartsWith(message, "conflicting") ? "GangConflict" : "GangInvalid",
          "",
          absl::StrCat("topogang: ", message),
          {PodBinding{pod.name, pod.namespace_, pod.uid, ""}}});
}

FilterDecision GangLedger::Filter(const PodInfo& pod, const std::vector<std::string>& offered) {
  if (std::optional<std::string> gone = DeletedPodMessage(pod)) return ErrorResult(*gone);
  return Filter(pod, offered, /*replanned=*/false);
}

FilterDecision GangLedger::Filter(const PodInfo& pod, const std::vector<std::string>& offered,
                                  bool replanned) {
  if (!options_.scheduler_names.empty() &&
      std::find(options_.scheduler_names.begin(), options_.scheduler_names.end(),
                pod.scheduler_name) == options_.scheduler_names.end()) {
    // kube-scheduler sends its extenders the pods of every profile it runs; this one serves only
    // the configured ones. Anything else is a misconfiguration or a forged request.
    return ErrorResult(absl::StrCat(
        "pod ", pod.Key(), " names scheduler \"", pod.scheduler_name, "\"; this topogangd serves ",
        absl::StrJoin(options_.scheduler_names, ", "), " (daemon.scheduler_names)"));
  }
  GangResolution resolved = Resolve(pod);
  if (resolved.kind == GangResolution::Kind::kError) {
    WarnMembership(pod, resolved.message);
    return ErrorResult(absl::StrCat("pod ", pod.Key(), ": ", resolved.message));
  }
  if (resolved.kind == GangResolution::Kind::kWaiting) {
    // An error, not a plain failure: kube-scheduler retries it after its backoff (seconds), not
    // after the next cluster event, so the pod moves once the object arrives.
    return ErrorResult(absl::StrCat("pod ", pod.Key(), ": ", resolved.message));
  }
  std::optional<GangMembership> membership;
  if (resolved.kind == GangResolution::Kind::kGang) membership = std::move(resolved.gang);
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  if (!membership.has_value() && pod.gpus == 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (passthrough_.size() > 100000) passthrough_.clear();
      passthrough_[key] = pod.scheduler_name;
    }
    return FilterDecision{};
  }
  if (pod.gpus == 0) {
    return ErrorResult(absl::StrCat("pod ", pod.Key(), " is in gang ", membership->id,
                                    " but requests no ", options_.gpu_resource,
                                    "; gang members must request GPUs"));
  }
  const bool multi = membership.has_value() && membership->size > 1;
  GangSpec spec;
  if (membership.has_value()) {
    spec = membership->ToSpec(static_cast<int>(pod.gpus));
  } else {
    spec.name = SingletonGangId(pod.namespace_, pod.name);
    spec.members = 1;
    spec.gpus_per_member = static_cast<int>(pod.gpus);
  }
  spec.priority = pod.priority;
  auto estimate = ParseRuntimeEstimate(pod.labels, pod.annotations, pod.active_deadline_seconds);
  if (!estimate.ok()) {
    WarnMembership(pod, std::string(estimate.status().message()));
    return ErrorResult(absl::StrCat("pod ", pod.Key(), ": ", estimate.status().message()));
  }
  spec.runtime_estimate = *estimate;
  spec.runtime_limit = RuntimeLimit(pod.active_deadline_seconds);
  const std::string id = spec.name;
  FailList fails;
  FilterDecision result;
  bool decided = false;
  bool replan = false;
  std::optional<GangNotice> notice;
  std::vector<GangNotice> notices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    NoteOfferedLocked(offered, pod.gpus, state_.clock().Now());
    SyncOneLocked(id, &fails);
    if (fills_.contains(id)) ExpireFillsLocked(&fails);
    auto it = gangs_.find(id);
    absl::StatusOr<std::vector<std::string>> avoid = std::vector<std::string>{};
    if (it == gangs_.end()) avoid = AvoidedNodesLocked(spec, pod);
    if (!avoid.ok()) {
      decided = true;
      result = ErrorResult(absl::StrCat("pod ", pod.Key(), ": ", avoid.status().message()));
      it = gangs_.end();
    } else if (it != gangs_.end()) {
      const GangSpec& have = it->second.spec;
      if (it->second.elastic_max > 0 && membership.has_value() && membership->min_members > 0 &&
          spec.members != it->second.elastic_max) {
        // Its job was scaled (an autoscaler changed a PyTorchJob's workers): the maximum follows,
        // never below the members it has.
        it->second.elastic_max = std::max(spec.members, static_cast<int>(it->second.slots.size()));
        elastic_.SetMaxMembers(id, it->second.elastic_max);
        spec.members = it->second.elastic_max;
      }
      const int have_size = it->second.elastic_max > 0 ? it->second.elastic_max : have.members;
      if (have_size != spec.members || have.gpus_per_member != spec.gpus_per_member ||
          have.required_tier != spec.required_tier || have.slice.members != spec.slice.members ||
          have.slice.tier != spec.slice.tier ||
          have.required_tier_max_wait != spec.required_tier_max_wait) {
        decided = true;
        auto wait = [](const GangSpec& g) -> std::string {
          if (g.required_tier_max_wait == absl::InfiniteDuration()) return "";
          return absl::StrCat(" for at most ", absl::FormatDuration(g.required_tier_max_wait));
        };
        result = ErrorResult(absl::StrCat(
            "pod ", pod.Key(), " says gang ", id, " is ", spec.members, " pods x ",
            spec.gpus_per_member, " GPUs", spec.required_tier.empty() ? "" : " within one ",
            spec.required_tier, wait(spec), ", but its members so far say ", have_size, " pods x ",
            have.gpus_per_member, " GPUs", have.required_tier.empty() ? "" : " within one ",
            have.required_tier, wait(have), "; all members must carry the same values"));
      }
    } else {
      absl::Time now = state_.clock().Now();
      const int elastic_min = multi ? membership->min_members : 0;
      bool started_elastic = false;
      // Planned with the hot spares hidden: ordinary work, gangs of one included, never lands
      // on a spare (ReserveBestOffered sees no free GPU there either).
      absl::Status st = state_.Plan([&](GangScheduler& s) -> absl::Status {
        if (multi) {
          // Plan only where kube-scheduler would put this pod: the nodes it did not offer are
          // hidden from the planner. Remembered per gang, so a queue that starts another
          // waiting gang during this call plans that one inside its own offered nodes.
          // A hold for it, once it starves, avoids only the nodes it may never use (those
          // refused although they had room): a node full now must stay one it can wait for.
          if (excluded_.size() > 100000) {
            excluded_.clear();
            hold_excluded_.clear();
            refused_since_.clear();
          }
          std::vector<int>& ex = excluded_[id];
          ex = NodesNotOffered(s.cluster(), offered);
          // A node freed moments ago may simply not be free yet in kube-scheduler's cache (its
          // watch behind ours): not offered is no sign the gang may not use it. Planned there,
          // the member is offered its slot once kube-scheduler catches up; kept out, a younger
          // gang takes the node. But once that plan was dropped because this member is not
          // offered such a node (`replanned`), the gang is planned strictly inside the offer:
          // either the node is one it may not use (a selector, a taint), and planning there
          // again would only loop until the moment passed; or kube-scheduler has yet to see the
          // deletion, and when it does, that event sends this pod back to be tried again.
          // Either way it is not one it may never use (hold_ex keeps queue passes off it).
          const std::vector<int> exempt = FreedUnseenLocked(s, ex, spec.gpus_per_member, now);
          if (!replanned) {
            std::erase_if(ex, [&](int n) { return absl::c_binary_search(exempt, n); });
          }
          std::vector<int>& hold_ex = hold_excluded_[id];
          hold_ex = NodesItMayNeverUseLocked(s, id, ex, exempt, spec.gpus_per_member);
          NoteRefusedWithRoomLocked(id, hold_ex, now);
          for (int n : NodeIndexes(s.cluster(), *avoid)) {
            ex.push_back(n);
            hold_ex.push_back(n);
          }
          // Planned strictly, it leaves them free, but not to a gang behind it in this pass: once
          // offered them (the deletion's event sends its pod back) it takes them first.
          if (replanned) asker_exempt_ = exempt;
          absl::Status admitted =
              AdmitAvoidingLocked(s, spec, *avoid, now, WaitingSinceLocked(pod)).status();
          asker_exempt_.clear();
          if (elastic_min > 0 && absl::IsResourceExhausted(admitted) &&
              StartElasticLocked(s, spec, elastic_min, now).ok()) {
            admission_->Forget(s, id);  // started smaller: it no longer waits in the queue
            started_elastic = true;
            return absl::OkStatus();
          }
          return admitted;
        }
        refused_since_.erase(id);
        if (!avoid->empty()) excluded_[id] = hold_excluded_[id] = NodeIndexes(s.cluster(), *avoid);
        auto r = AdmitAvoidingLocked(s, spec, *avoid, now, WaitingSinceLocked(pod));
        excluded_.erase(id);  // planned once; while it waits, queue passes keep off what it avoids
        if (!r.ok()) return r.status();
        hold_excluded_.erase(id);
        // A gang of one needs its node among those kube-scheduler offered (its own filters may
        // have rejected the planner's pick); otherwise take the best fit among the offered.
        const Cluster& c = s.cluster();
        int planned = (*r)->placement.members[0].node;
        for (const std::string& n : offered) {
          if (n == c.node(planned).name) return absl::OkStatus();
        }
        (void)s.Release(id);
        if (avoid->empty()) return ReserveBestOffered(s, spec, offered, now);
        std::vector<std::string> usable;
        for (const std::string& n : offered) {
          if (!std::binary_search(avoid->begin(), avoid->end(), n)) usable.push_back(n);
        }
        return ReserveBestOffered(s, spec, usable, now);
      });
      WakeStartedLocked(id, key);
      if (!st.ok()) {
        std::string reason = absl::StrCat("topogang: ", GangLabel(spec, multi),
                                          " cannot be placed now: ", st.message());
        // A gang of one may still fit after kube-scheduler preempts on one node; a real gang
        // cannot be made to fit node by node, so its nodes are unresolvable for kube-scheduler's
        // preemption, and topogang preempts whole gangs for it instead.
        std::optional<std::string> preempting;
        if (multi) preempting = PreemptLocked(spec, pod, offered, &fails, &notices);
        result = FailAll(preempting ? *preempting : reason, /*unresolvable=*/multi);
        if (!preempting && absl::IsResourceExhausted(st) && WokenLocked(key, now)) {
          // Woken by an event topogangd may not have seen yet: tried again after backoff.
          result = ErrorResult(absl::StrCat(
              GangLabel(spec, multi), " cannot be placed now: ", st.message(),
              " (answered as an error once, so kube-scheduler tries again after its backoff in "
              "case topogang had not yet seen the change that woke this pod)"));
        }
        decided = true;
        if (multi) NoteWaitingPodLocked(id, key);
        if (!preempting)
          state_.Publish({0, {}, "unschedulable", id, "", std::string(st.message())});
      } else {
        PreemptorPlacedLocked(id);
        ForgetWaitingLocked(id);  // its pods hold slots now
        Entry e;
        e.spec = spec;
        e.multi = multi;
        e.permit_barrier = multi && membership->upstream &&
                           options_.gang_barrier == GangLedgerOptions::GangBarrier::kAuto;
        if (started_elastic) {
          e.elastic_max = spec.members;
          e.spec.members = elastic_min;
        }
        e.slots.resize(e.spec.members);
        it = gangs_.emplace(id, std::move(e)).first;
        pending_.insert(id);
        std::vector<std::string> nodes = SlotNodesLocked(id);
        if (multi) {
          absl::flat_hash_set<absl::string_view> ok(offered.begin(), offered.end());
          it->second.planned_in_offer = std::all_of(
              nodes.begin(), nodes.end(), [&](const std::string& n) { return ok.contains(n); });
        }
        std::vector<std::string> distinct = nodes;
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        state_.Publish({0,
                        {},
                        "reserve",
                        id,
                        distinct.size() == 1 ? distinct[0] : "",
                        absl::StrCat(it->second.spec.members, "x", spec.gpus_per_member,
                                     " GPUs on ", distinct.size(), " nodes",
                                     started_elastic ? absl::StrCat(" (elastic: its minimum of ",
                                                                    spec.members, ")")
                                                     : "")});
        if (multi) {
          const GangSpec& got = it->second.spec;
          notice = GangNotice{
              "Normal",
              "GangReserved",
              id,
              absl::StrCat("topogang reserved ", got.total_gpus(), " GPUs on ", distinct.size(),
                           " nodes for ", GangLabel(spec, multi),
                           started_elastic
                               ? absl::StrCat(": its minimum of ", got.members,
                                              " members now (topogang.io/min-members), more as "
                                              "GPUs free up next to them")
                               : ""),
              {PodBinding{pod.name, pod.namespace_, pod.uid, ""}}};
        }
      }
    }
    if (!decided && it != gangs_.end() && it->second.adopted && !it->second.binding) {
      // A gang found partly bound (restart mid-bind): its missing members get GPUs next to the
      // bound ones, all of them or none.
      auto p = by_pod_.find(key);
      if (p == by_pod_.end() || p->second.first != id) {
        if (absl::Status st = ReserveMissingLocked(id, it->second, offered, &notices); !st.ok()) {
          int bound = 0;
          for (const Member& m : it->second.slots) bound += m.bound ? 1 : 0;
          result =
              FailAll(absl::StrCat("topogang: ", GangLabel(it->second.spec, true), " has ", bound,
                                   " members running; its missing members cannot be "
                                   "placed next to them now: ",
                                   st.message()),
                      /*unresolvable=*/true);
          decided = true;
          if (absl::IsResourceExhausted(st)) NoteRefusedRepairLocked(id);
          state_.Publish({0, {}, "unschedulable", id, "", std::string(st.message())});
        }
      }
    }
    if (!decided && it != gangs_.end()) {
      Entry& e = it->second;
      std::vector<std::string> nodes = SlotNodesLocked(id);
      int slot = -1;
      if (auto p = by_pod_.find(key); p != by_pod_.end() && p->second.first == id) {
        slot = p->second.second;
        // A retry whose slot kube-scheduler no longer offers (its filters now reject the node:
        // resources taken, a new taint): plan the gang again rather than steer it there forever.
        const std::string& held = slot < static_cast<int>(nodes.size()) ? nodes[slot] : "";
        if (std::find(offered.begin(), offered.end(), held) == offered.end() &&
            DropForReplanLocked(id, replanned, &fails)) {
          replan = true;
          decided = true;
        }
      }
      if (!decided && slot < 0) {
        // The first free slot whose node kube-scheduler offered: look up only the free slots'
        // nodes (few) while scanning the offered names once.
        absl::flat_hash_map<absl::string_view, int> wanted;
        int free_slots = 0;
        for (int i = 0; i < static_cast<int>(e.slots.size()); ++i) {
          if (e.slots[i].assigned || i >= static_cast<int>(nodes.size())) continue;
          ++free_slots;
          wanted.emplace(nodes[i], i);  // keeps the lowest slot per node
        }
        for (const std::string& n : offered) {
          auto w = wanted.find(n);
          if (w != wanted.end() && (slot < 0 || w->second < slot)) slot = w->second;
        }
        bool grew = false;  // an elastic gang's pod beyond its size took a new slot
        if (slot < 0 && free_slots == 0 && e.elastic_max > 0 &&
            static_cast<int>(e.slots.size()) < e.elastic_max) {
          // An elastic gang's pod beyond its current size: it joins once the gang runs, where
          // there is room next to it (it binds alone, like a replacement).
          if (!e.running) {
            result = ErrorResult(absl::StrCat(
                "gang ", id, " starts with ", e.spec.members, " of its ", e.elastic_max,
                " members (topogang.io/min-members); pod ", pod.Key(), " joins it once they run"));
            decided = true;
          } else if (absl::StatusOr<int> grown =
                         GrowElasticLocked(id, e, pod, key, offered, &notices);
                     grown.ok()) {
            slot = *grown;
            nodes = SlotNodesLocked(id);
            grew = true;
          } else {
            result =
                FailAll(absl::StrCat("topogang: elastic ", GangLabel(e.spec, true), " of up to ",
                                     e.elastic_max, " cannot grow now: ", grown.status().message()),
                        /*unresolvable=*/true);
            decided = true;
            state_.Publish({0, {}, "unschedulable", id, "", std::string(grown.status().message())});
          }
        }
        if (decided || grew) {
          // Answered above: an elastic gang's pod beyond its current size.
        } else if (slot < 0 && free_slots > 0 && DropForReplanLocked(id, replanned, &fails)) {
          // The reservation sat on nodes kube-scheduler will not give this pod: plan the gang
          // again inside what this pod was offered (below, outside the lock).
          replan = true;
          decided = true;
        } else if (slot < 0 && free_slots == 0) {
          // An error, not a rejection: kube-scheduler retries it after its backoff (1 s, up to
          // 10 s) instead of parking it until the next cluster event or for 5 minutes. The usual
          // cause is transient: a controller's replacement for a deleted member, filtered before
          // topogangd's watch saw the deletion (kube-scheduler's informer and ours race).
          result = ErrorResult(absl::StrCat(
              GangLabel(e.spec, e.multi),
              " already has a pod for every member; this pod is one too many (a replacement for "
              "a deleted member is retried and placed once topogang has seen the deletion)"));
          decided = true;
        } else if (slot < 0 && !e.planned_in_offer) {
          // Planned again inside this pod's offer, and still on nodes it was not offered (a
          // defence: the re-plan is strict). Tried again after its backoff, not parked until the
          // next cluster event.
          result = ErrorResult(absl::StrCat(
              GangLabel(e.spec, e.multi),
              " is reserved on nodes kube-scheduler did not offer this pod; it is tried again "
              "after its backoff"));
          decided = true;
        } else if (slot < 0 && e.binding) {
          // A replacement for a member deleted while the gang's bindings are still at the API
          // server: it is placed next to the survivors once they are done. An Error, so it comes
          // back after its backoff; refused, it waited up to 5 minutes (SparesEndToEnd, loaded).
          result = ErrorResult(absl::StrCat(GangLabel(e.spec, e.multi), " is being bound; pod ",
                                            pod.Key(), " is placed once its bindings are done"));
          decided = true;
        } else if (slot < 0) {
          result = FailAll(absl::StrCat("topogang: ", GangLabel(e.spec, e.multi),
                                        " holds GPUs on nodes that kube-scheduler did not offer "
                                        "for this pod (its own filters rejected them, or "
                                        "percentageOfNodesToScore is below 100)"),
                           /*unresolvable=*/true);
          decided = true;
        } else {
          Member& m = e.slots[slot];
          m.assigned = true;
          m.key = key;
          m.pod = PodBinding{pod.name, pod.namespace_, pod.uid, nodes[slot], pod.scheduler_name};
          if (e.multi) m.pod.annotations = RankAnnotations(slot, e.spec.members);
          by_pod_[key] = {id, slot};
          ForgetWaitingPodLocked(key);
          // Progress: a new member has come, the reservation lives on.
          state_.With([&](GangScheduler& s) { return s.Touch(id, state_.clock().Now()); })
              .IgnoreError();
        }
      }
      if (!decided) {
        const std::string node = slot < static_cast<int>(nodes.size()) ? nodes[slot] : "";
        // The verb passes only `node`; when kube-scheduler did not offer it, it fails every
        // node instead (FilterDecision::kSteer).
        result.kind = FilterDecision::Kind::kSteer;
        result.node = node;
        result.reason =
            absl::StrCat("topogang: steered to ", node, e.multi ? " (gang " + id + ")" : "");
        result.unresolvable = true;
      }
    }
  }
  RunFails(fails);
  if (notice) Notify(*notice);
  for (const GangNotice& n : notices) Notify(n);
  if (replan) return Filter(pod, offered, true);  // no entry now: reserves inside `offered`
  return result;
}

std::string GangLedger::ReservedNode(const PodInfo& pod) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = by_pod_.find(PodKey(pod.uid, pod.namespace_, pod.name));
  if (p == by_pod_.end()) return "";
  std::vector<std::string> nodes = SlotNodesLocked(p->second.first);
  return p->second.second < static_cast<int>(nodes.size()) ? nodes[p->second.second] : "";
}

}  // namespace topogang
