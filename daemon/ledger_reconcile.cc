#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"

namespace topogang {

absl::StatusOr<MemberPlacement> GangLedger::TakeBoundGpusLocked(const PodInfo& pod) {
  // Take free GPUs on its node; if reservations hold them, those reservations yield (the API
  // server is the truth: the pod runs there) and are re-planned on their next filter. So do the
  // queue's holds there (kube-scheduler counts held GPUs as free: no pod requests them): the
  // queue holds its claim's free GPUs again on its next pass.
  std::vector<std::string> displaced;
  auto attempt = [&] {
    return state_.With([&](GangScheduler& s) -> absl::StatusOr<MemberPlacement> {
      const Cluster& c = s.cluster();
      int n = c.FindNode(pod.node_name);
      if (n < 0) return absl::NotFoundError("node not in the GPU model");
      auto pick = [&]() {
        std::vector<int> g;
        const NodeInfo& ni = c.node(n);
        for (int i = ni.gpu_begin;
             i < ni.gpu_begin + ni.gpus && static_cast<int>(g.size()) < pod.gpus; ++i) {
          if (c.IsFree(i)) g.push_back(i);
        }
        return g;
      };
      std::vector<int> gpus = pick();
      if (static_cast<int>(gpus.size()) < pod.gpus) {
        std::vector<std::string> holds;
        for (const auto& [gid, rec] : s.gangs()) {
          if (rec.state == GangState::kRunning) continue;
          for (const MemberPlacement& mp : rec.placement.members) {
            if (mp.node == n) {
              (rec.state == GangState::kHeld ? holds : displaced).push_back(gid);
              break;
            }
          }
        }
        for (const std::string& gid : displaced) s.Release(gid).IgnoreError();
        for (const std::string& gid : holds) s.Release(gid).IgnoreError();
        gpus = pick();
      }
      if (static_cast<int>(gpus.size()) < pod.gpus) {
        return absl::ResourceExhaustedError(
            absl::StrCat("node ", pod.node_name, " has only ", gpus.size(), " free GPUs"));
      }
      return MemberPlacement{n, std::move(gpus)};
    });
  };
  auto placed = attempt();
  FailList ignored;
  if (!placed.ok() && placed.status().code() == absl::StatusCode::kResourceExhausted) {
    // Regrouped gangs' reservations for missing members yield too (their bound members stay).
    std::vector<std::string> yield;
    state_.With([&](GangScheduler& s) {
      int n = s.cluster().FindNode(pod.node_name);
      for (const std::string& id : fills_) {
        auto it = gangs_.find(id);
        const GangRecord* rec = s.Find(id);
        if (it == gangs_.end() || it->second.binding || rec == nullptr) continue;
        const auto& members = rec->placement.members;
        for (size_t i = 0; i < members.size() && i < it->second.slots.size(); ++i) {
          if (members[i].node == n && !it->second.slots[i].bound) {
            yield.push_back(id);
            break;
          }
        }
      }
      return 0;
    });
    for (const std::string& id : yield) {
      ShrinkToBoundLocked(id, "topogang: reservation displaced by a pod bound outside topogang",
                          &ignored);
    }
    if (!yield.empty()) placed = attempt();
  }
  for (const std::string& gid : displaced) {
    DropEntryLocked(gid, "topogang: reservation displaced by a pod bound outside topogang", false,
                    &ignored);
  }
  if (!ignored.empty()) {
    // Callbacks must not run under mu_; hand them to the worker.
    auto shared = std::make_shared<FailList>(std::move(ignored));
    Enqueue([shared] { RunFails(*shared); });
  }
  return placed;
}

void GangLedger::ObservePod(const PodInfo& pod) {
  if (pod.Terminal()) {
    if (pod.phase == "Failed" && !pod.node_name.empty()) {
      // Its gang avoids this node when it is planned again (a restarted job).
      std::lock_guard<std::mutex> lock(mu_);
      auto p = by_pod_.find(PodKey(pod.uid, pod.namespace_, pod.name));
      if (p != by_pod_.end()) {
        auto g = gangs_.find(p->second.first);
        if (g != gangs_.end() && g->second.multi) RecordFailureLocked(g->first, pod.node_name);
      }
    }
    PodDeleted(pod);
    return;
  }
  if (pod.gpus == 0) return;
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  std::lock_guard<std::mutex> lock(mu_);
  if (pod.node_name.empty()) {
    // Waiting for a node since now (gates removed: since then), for the queue's arrival order.
    if (pod.gated) {
      waiting_since_.erase(key);
    } else {
      if (waiting_since_.size() >= kMaxHints) waiting_since_.clear();  // only hints
      waiting_since_.try_emplace(key, state_.clock().Now());
    }
    return;
  }
  waiting_since_.erase(key);
  bound_at_rebuild_.erase(key);  // its binding went through
  recently_bound_.erase(key);
  if (auto p = by_pod_.find(key); p != by_pod_.end()) {
    const std::string id = p->second.first;
    Entry& e = gangs_.at(id);
    const int slot = p->second.second;
    Member& m = e.slots[slot];
    // Ours, counted where it runs (a status update of a running pod: the hot path). Its slot may
    // have moved since (an applied replacement) while the pod still runs here.
    if (m.bound && m.pod.node == pod.node_name) return;
    std::vector<std::string> nodes = SlotNodesLocked(id);
    const bool here = slot < static_cast<int>(nodes.size()) && nodes[slot] == pod.node_name;
    if (here) {
      // Bound where topogang reserved it: ours, GPUs already counted (if the answer was lost, a
      // client timeout on a POST the server applied, the watch tells).
      m.bound = true;
      return;
    }
    if (e.binding && !m.bound) return;  // its binding is in flight; the answer decides
    // Bound by someone else while we held a slot for it (or adopted at a rebuild on its binding's
    // node, and bound elsewhere: ours then failed): fall through to adopt, dropping ours.
    FailList fails;
    if (m.bound || (e.running && !e.adopted)) {
      // Only this member's slot goes; the rest of the running gang keeps its GPUs.
      state_.With([&](GangScheduler& s) { return s.ReleaseMember(id, slot); }).IgnoreError();
      by_pod_.erase(key);
      m = Member{};
      e.adopted = true;
    } else if (e.adopted) {
      // Its gang's bound members keep running; only the reservations go.
      ShrinkToBoundLocked(id, "topogang: a member of the gang was bound outside topogang", &fails);
    } else {
      DropEntryLocked(id, "pod was bound outside topogang", true, &fails);
    }
    auto shared = std::make_shared<FailList>(std::move(fails));
    Enqueue([shared] { RunFails(*shared); });
  }
  if (auto err = AdoptBoundLocked(pod)) {
    state_.Publish(
        {0, {}, "adopt-failed", SingletonGangId(pod.namespace_, pod.name), pod.node_name, *err});
  } else {
    NoteOccupiedLocked(pod.node_name, state_.clock().Now());
  }
}

void GangLedger::PodDeleted(const PodInfo& pod) { ForgetPod(pod, /*gone=*/true); }

std::optional<std::string> GangLedger::DeletedPodMessage(const PodInfo& pod) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (pod.uid.empty() || !deleted_uids_.contains(pod.uid)) return std::nullopt;
  return absl::StrCat("pod ", pod.Key(),
                      " was deleted; kube-scheduler's cache has not caught up yet (the pod leaves "
                      "its queue when it does)");
}

void GangLedger::ForgetPod(const PodInfo& pod, bool gone) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  std::lock_guard<std::mutex> lock(mu_);
  if (gone && !pod.uid.empty()) {
    if (deleted_uids_.size() >= kMaxHints) deleted_uids_.clear();  // hints only
    deleted_uids_[pod.uid] = SteadyNow();
  }
  passthrough_.erase(key);
  waiting_since_.erase(key);
  bound_at_rebuild_.erase(key);
  recently_bound_.erase(key);
  if (!pod.node_name.empty()) {
    if (freed_at_.size() >= kMaxHints) freed_at_.clear();  // only hints
    // At most what kube-scheduler saw free there before: the node's GPUs less this pod's. Not the
    // model's free GPUs, which leave out those reserved for gangs not yet bound, free to it.
    // A node not in the model: nothing to plan there, so nothing to note.
    const int64_t free_before = state_.With([&](GangScheduler& s) -> int64_t {
      const int n = s.cluster().FindNode(pod.node_name);
      return n < 0 ? -1 : std::max<int64_t>(0, s.cluster().node(n).gpus - pod.gpus);
    });
    if (free_before >= 0) freed_at_[pod.node_name] = Freed{state_.clock().Now(), 0, free_before};
  }
  auto p = by_pod_.find(key);
  if (p == by_pod_.end()) {
    // A pod of a gang that waits unreserved: the last one gone takes the gang out of the queue.
    auto w = waiting_pod_.find(key);
    if (w == waiting_pod_.end()) return;
    const std::string gang = w->second;
    ForgetWaitingPodLocked(key);
    if (!waiting_pods_.contains(gang) && !gangs_.contains(gang)) {
      state_.With([&](GangScheduler& s) {
        admission_->Forget(s, gang);
        // Started meanwhile by the queue (another gang's filter, the timer) for pods that
        // never came back: its GPUs go now, not after the reservation's TTL.
        if (const GangRecord* r = s.Find(gang); r && r->state == GangState::kReserved) {
          (void)s.Release(gang);
        }
        return 0;
      });
      excluded_.erase(gang);
      hold_excluded_.erase(gang);
      state_.Publish({0, {}, "release", gang, "", "every pod of the waiting gang was deleted"});
    }
    return;
  }
  ForgetWaitingPodLocked(key);  // a stale record must not outlive the pod
  const std::string id = p->second.first;
  const int slot = p->second.second;
  Entry& e = gangs_.at(id);
  Member& m = e.slots[slot];
  if (!e.running && !e.adopted && !e.binding) {
    // A pending gang: the pod leaves its slot at once (its held bind, if any, is answered), and
    // a gang none of whose pods is left holds nothing.
    FailList fails;
    if (m.held) fails.emplace_back(std::move(m.held), "topogang: the pod was deleted");
    by_pod_.erase(key);
    m = Member{};
    const bool any =
        std::any_of(e.slots.begin(), e.slots.end(), [](const Member& x) { return x.assigned; });
    if (!any && !e.binding) {
      DropEntryLocked(id, "topogang: every pod of the gang was deleted", /*release_core=*/true,
                      &fails);
      state_.With([&](GangScheduler& s) {
        admission_->Forget(s, id);
        excluded_.erase(id);
        hold_excluded_.erase(id);
        return 0;
      });
      state_.Publish({0, {}, "release", id, "", "every pod of the pending gang was deleted"});
    }
    if (!fails.empty()) {
      auto shared = std::make_shared<FailList>(std::move(fails));
      Enqueue([shared] { RunFails(*shared); });
    }
    return;
  }
  if (e.adopted && !m.bound && !e.running && !e.binding) {
    return;  // a regrouped gang's missing member: its reservation goes with the TTL
  }
  // A running gang's member is gone (finished, deleted, or never bound because its binding
  // failed), or a binding gang's (its binding may be at the API server: if it succeeds, the
  // callback finds the slot no longer this pod's): its GPUs come back with its pod and its slot is
  // free again, so a replacement pod filters next to the surviving members (the gang is managed
  // member by member from now on, like a regrouped one). A gang whose barrier opened is committed
  // in the core: the same. The node it was on is remembered in the slot: its replacement takes the
  // spare next to it.
  std::string lost_node;
  state_
      .With([&](GangScheduler& s) {
        const GangRecord* rec = s.Find(id);
        if (rec != nullptr && slot < static_cast<int>(rec->placement.members.size()) &&
            rec->placement.members[slot].node >= 0) {
          lost_node = s.cluster().node(rec->placement.members[slot].node).name;
        }
        return s.ReleaseMember(id, slot);
      })
      .IgnoreError();
  if (lost_node.empty()) lost_node = m.pod.node.empty() ? m.lost_node : m.pod.node;
  by_pod_.erase(key);
  if (m.held) {
    auto shared = std::make_shared<FailList>();
    shared->emplace_back(std::move(m.held), "topogang: the pod was deleted");
    Enqueue([shared] { RunFails(*shared); });
  }
  m = Member{};
  m.lost_node = lost_node;
  e.adopted = true;
  // Members whose binding is still at the API server may yet be bound: not gone.
  bool all_gone = std::all_of(e.slots.begin(), e.slots.end(),
                              [](const Member& x) { return !x.bound && !x.in_flight; });
  if (all_gone) {
    FailList fails;
    DropEntryLocked(id, "topogang: every running member of the gang is gone; filter again",
                    /*release_core=*/true, &fails);
    // Whatever comes under this name next is a new gang to the queue (its own wait, e.g.).
    state_.With([&](GangScheduler& s) {
      admission_->Forget(s, id);
      return 0;
    });
    state_.Publish({0, {}, "release", id, "", "every member pod finished or was deleted"});
    if (!fails.empty()) {
      auto shared = std::make_shared<FailList>(std::move(fails));
      Enqueue([shared] { RunFails(*shared); });
    }
  }
}

absl::Status GangLedger::Rebuild(Cluster cluster, const std::vector<PodInfo>& pods) {
  FailList fails;
  absl::Status result = absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Pending gangs survive a rebuild (their pods keep their slots); running ones are rebuilt
    // from what the API server says is bound. So are gangs whose bindings are at the API server
    // (planned again they could move, while their pods are bound where they were): their pods,
    // and those bound moments ago, are adopted on their binding's node though the watch may
    // still show them pending (bound_at_rebuild_, recently_bound_). The old callbacks find no
    // entry of theirs; a member whose binding fails gives its GPUs back and filters again.
    std::map<std::string, std::string> bound_at = bound_at_rebuild_;  // still unanswered
    for (const auto& [key, where] : by_pod_) {
      const Member& m = gangs_.at(where.first).slots[where.second];
      if (!m.in_flight || m.pod.node.empty()) continue;  // m.pod: the binding, node and all
      bound_at[key] = m.pod.node;
      bound_at_rebuild_[key] = m.pod.node;
    }
    const absl::Time steady = SteadyNow();
    absl::erase_if(recently_bound_,
                   [&](const auto& r) { return steady - r.second.at > kWatchLag; });
    for (const auto& [key, r] : recently_bound_) bound_at.try_emplace(key, r.node);
    std::map<std::string, Entry> pending;
    for (auto& [id, e] : gangs_) {
      const bool binding = e.binding && !e.running;
      if (binding || e.adopted) {
        // Regrouped again from the pod list below; its missing members filter again.
        const char* why = binding
                              ? "topogang: the cluster changed while the gang was being bound; a "
                                "pod whose binding went through is adopted where it is bound"
                              : "topogang: the cluster changed while the gang's missing members "
                                "waited to bind; retry";
        for (Member& m : e.slots) {
          if (m.held) fails.emplace_back(std::move(m.held), why);
        }
        continue;
      }
      if (!e.running) pending.emplace(id, std::move(e));
    }
    // A pending gang's reservation keeps its deadline: planned again on the new model, it must
    // not live a TTL longer for it (a reservation whose pods kube-scheduler gave up on, say
    // deleted pods it filtered from a lagging cache, would live as long as rebuilds kept coming).
    // Unless the rebuild itself sets it back: members held at bind are told to retry (through
    // kube-scheduler's backoff, up to 10 s), and moved slots must be reached again; those get a
    // fresh TTL below, as a health re-plan gives one (GangScheduler::ReactToHealthLoss).
    struct Deadline {
      absl::Time at;
      std::vector<std::string> nodes;  // the slots' nodes before
    };
    std::map<std::string, Deadline> deadlines;
    for (const auto& [id, e] : pending) {
      if (std::any_of(e.slots.begin(), e.slots.end(), [](const Member& m) { return !!m.held; })) {
        continue;
      }
      state_.With([&](GangScheduler& s) {
        const GangRecord* r = s.Find(id);
        if (r != nullptr && r->state == GangState::kReserved) deadlines[id].at = r->expires_at;
        return 0;
      });
      if (auto d = deadlines.find(id); d != deadlines.end()) d->second.nodes = SlotNodesLocked(id);
    }
    gangs_.clear();
    excluded_.clear();  // node indexes of the old model
    hold_excluded_.clear();
    refused_since_.clear();
    preempting_.clear();  // the same; a preemptor plans again at its next filter
    by_pod_.clear();
    pending_.clear();
    fills_.clear();
    elastic_ = ElasticGangs{};  // start domains of the old model: such a gang grows no more
    GangScheduler fresh(std::move(cluster),
                        state_.With([](GangScheduler& s) { return s.options(); }));
    state_.ReplaceScheduler(std::move(fresh));
    auto adopt = [&](const PodInfo& p) {
      if (auto err = AdoptBoundLocked(p)) {
        state_.Publish(
            {0, {}, "adopt-failed", SingletonGangId(p.namespace_, p.name), p.node_name, *err});
      }
    };
    for (const PodInfo& p : pods) {
      if (p.Terminal() || p.gpus == 0) continue;
      if (!p.node_name.empty()) {
        bound_at_rebuild_.erase(PodKey(p.uid, p.namespace_, p.name));  // the watch has told
        adopt(p);
      } else if (auto b = bound_at.find(PodKey(p.uid, p.namespace_, p.name)); b != bound_at.end()) {
        PodInfo bound = p;
        bound.node_name = b->second;
        adopt(bound);
      }
    }
    // Spares are chosen again now that running pods hold their GPUs: a node found busy is not
    // promised as an idle spare, and pending gangs below are planned around the new pool.
    state_.RebuildSpares();
    for (auto& [id, e] : pending) {
      absl::Time now = state_.clock().Now();
      const GangSpec& spec = e.spec;  // a structured binding cannot be captured (clang)
      absl::Status st = state_.Plan([&](GangScheduler& s) {
        return admission_->Admit(s, spec, now, ExclusionLocked(id), HoldExclusionLocked()).status();
      });
      if (!st.ok()) {
        for (Member& m : e.slots) {
          if (m.held) {
            fails.emplace_back(std::move(m.held),
                               absl::StrCat("topogang: the cluster changed and gang ", id,
                                            " no longer fits: ", st.message()));
          }
        }
        state_.Publish({0, {}, "drop", id, "", std::string(st.message())});
        continue;
      }
      if (auto d = deadlines.find(id);
          d != deadlines.end() && SlotNodesLocked(id) == d->second.nodes) {
        state_.With([&](GangScheduler& s) {
          const GangRecord* r = s.Find(id);
          if (r == nullptr || r->state != GangState::kReserved || r->expires_at <= d->second.at) {
            return 0;
          }
          // Touch sets now + TTL: this "now" puts the deadline back where it was.
          (void)s.Touch(id, d->second.at - s.options().reservation_ttl);
          return 0;
        });
      }
      state_.Publish({0, {}, "replan", id, "", "re-planned after the node set changed"});
      for (int i = 0; i < static_cast<int>(e.slots.size()); ++i) {
        // A held bind names the old node; fail it so the pod re-filters to its new slot.
        Member& m = e.slots[i];
        if (m.held) {
          fails.emplace_back(std::move(m.held),
                             "topogang: the cluster changed and the gang was re-planned; retry");
          m.held = nullptr;
        }
        if (m.assigned) by_pod_[m.key] = {id, i};
      }
      e.binding = false;
      pending_.insert(id);
      gangs_.emplace(id, std::move(e));
    }
    WakeStartedLocked("");
  }
  RunFails(fails);
  return result;
}

void GangLedger::ForgetWaitingPodLocked(const std::string& key) {
  auto w = waiting_pod_.find(key);
  if (w == waiting_pod_.end()) return;
  if (auto g = waiting_pods_.find(w->second); g != waiting_pods_.end()) {
    g->second.erase(key);
    if (g->second.empty()) waiting_pods_.erase(g);
  }
  waiting_pod_.erase(w);
}

void GangLedger::NoteWaitingPodLocked(const std::string& gang, const std::string& key) {
  if (waiting_pod_.size() > 200000) {  // bounded: pods deleted unseen would pile up
    waiting_pod_.clear();
    waiting_pods_.clear();
  }
  if (auto w = waiting_pod_.find(key); w != waiting_pod_.end() && w->second != gang) {
    ForgetWaitingPodLocked(key);  // it waits for another gang now
  }
  waiting_pod_[key] = gang;
  waiting_pods_[gang].insert(key);
}

void GangLedger::ForgetWaitingLocked(const std::string& gang) {
  auto g = waiting_pods_.find(gang);
  if (g == waiting_pods_.end()) return;
  for (const std::string& key : g->second) waiting_pod_.erase(key);
  waiting_pods_.erase(g);
}

bool GangLedger::WokenLocked(const std::string& key, absl::Time now) {
  if (options_.wake_retry <= absl::ZeroDuration()) return false;
  if (refused_at_.size() > 200000) {  // bounded: entries of pods deleted unseen would pile up
    absl::erase_if(refused_at_,
                   [&](const auto& e) { return now - e.second >= options_.wake_retry; });
    if (refused_at_.size() > 200000) refused_at_.clear();
  }
  auto [it, first] = refused_at_.try_emplace(key, now);
  const bool woken = !first && now - it->second >= options_.wake_retry;
  it->second = now;
  return woken;
}

}  // namespace topogang
