#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"

namespace topogang {

void GangLedger::Bind(const PodBinding& args, BindCallback done) {
  const std::string key = PodKey(args.pod_uid, args.pod_namespace, args.pod_name);
  // What is bound: the request, with the scheduler name seen at filter (not the caller's).
  PodBinding binding = args;
  binding.scheduler_name.clear();
  FailList fails;
  bool direct = false;
  bool open_barrier = false;
  bool fallback = false;  // an upstream gang that kube-scheduler did not hold at Permit
  std::string id;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto q = by_pod_.find(key); q != by_pod_.end()) SyncOneLocked(q->second.first, &fails);
    auto p = by_pod_.find(key);
    if (p == by_pod_.end()) {
      if (auto pt = passthrough_.find(key); pt != passthrough_.end()) {
        direct = true;
        binding.scheduler_name = pt->second;
      } else {
        fails.emplace_back(std::move(done),
                           absl::StrCat("topogang holds no reservation for pod ",
                                        args.pod_namespace, "/", args.pod_name,
                                        " (it expired or the daemon restarted); it will be "
                                        "scheduled again"));
      }
    } else {
      id = p->second.first;
      Entry& e = gangs_.at(id);
      generation = e.generation;
      Member& m = e.slots[p->second.second];
      std::vector<std::string> nodes = SlotNodesLocked(id);
      const std::string node =
          p->second.second < static_cast<int>(nodes.size()) ? nodes[p->second.second] : "";
      if (bound_at_rebuild_.contains(key)) {
        // Adopted at a rebuild while its binding was at the API server: that binding's answer
        // decides (a success here, while it may still fail, would leave kube-scheduler taking the
        // pod for bound).
        fails.emplace_back(std::move(done), "this pod's binding is in progress; retry");
      } else if (m.bound) {
        if (node == args.node) {
          fails.emplace_back(std::move(done), "");  // a retry of a bind that already succeeded
        } else {
          fails.emplace_back(std::move(done), absl::StrCat("pod is already bound to ", node));
        }
      } else if (m.in_flight) {
        // kube-scheduler asks again after its httpTimeout while the first binding is still at
        // the API server: a second one would only conflict with it.
        fails.emplace_back(std::move(done), "this pod's binding is in progress; retry");
      } else if (node != args.node) {
        // Never bind a member to a node its slot left (a re-plan moved the reservation): the
        // pod filters again and is steered to its new slot.
        fails.emplace_back(std::move(done), absl::StrCat("topogang reserved node ", node,
                                                         " for this pod, not ", args.node,
                                                         " (the reservation moved); it will be "
                                                         "scheduled again"));
      } else if (e.running || e.binding) {
        // The rest of the gang is bound (or being bound) and this member's binding failed: bind
        // it alone.
        binding.scheduler_name = m.pod.scheduler_name;
        binding.annotations = m.pod.annotations;
        m.pod = binding;
        m.in_flight = true;  // a rebuild meanwhile keeps its GPUs taken (bound_at_rebuild_)
        direct = true;
      } else {
        if (m.held) fails.emplace_back(std::move(m.held), "superseded by a newer bind request");
        m.held = std::move(done);
        m.held_until = SteadyNow() + options_.bind_window;
        binding.scheduler_name = m.pod.scheduler_name;
        binding.annotations = m.pod.annotations;
        m.pod = binding;
        barriers_.insert(id);
        if (m.arrived_node != node) {
          m.arrived_node = node;
          // Progress: the reservation lives on while members keep arriving.
          state_.With([&](GangScheduler& s) { return s.Touch(id, state_.clock().Now()); })
              .IgnoreError();
        }
        if (e.permit_barrier && !AllAssignedLocked(e)) {
          // kube-scheduler's GangScheduling plugin holds a PodGroup's members at Permit until
          // minCount of them passed filter and Reserve (KEP-4671, kubernetes/enhancements
          // keps/sig-scheduling/4671-gang-scheduling/README.md, "GangScheduling Plugin"; from
          // v1.36 the whole group is filtered in one workload cycle before any binds). A member
          // at bind while another never reached filter means nothing held them: the plugin is
          // off (it needs the GenericWorkload feature gate). Binding on arrival would start the
          // gang partly, so this gang falls back to topogang's own barrier.
          e.permit_barrier = false;
          fallback = true;
        }
        // A regrouped gang's bound members are already there: wait only for the missing ones.
        // A gang kube-scheduler held at Permit binds at once: its members passed Permit
        // together, and a second barrier here could only send them back through it.
        if (e.permit_barrier || AllArrivedLocked(e, nodes)) {
          e.binding = true;
          open_barrier = true;
        }
      }
    }
  }
  RunFails(fails);
  if (fallback) {
    const std::string msg = absl::StrCat(
        "topogang: a member of gang ", id,
        " reached bind before every member was filtered, so kube-scheduler's GangScheduling "
        "plugin is not holding the gang at Permit; topogang holds it at its own barrier instead "
        "(set daemon.gang_barrier: topogang when that plugin is disabled)");
    state_.Publish({0, {}, "barrier-fallback", id, "", msg});
    Notify({"Warning", "GangBarrierFallback", id, msg, {args}});
  }
  if (direct) {
    BindAsync(binding, [this, key, id, binding, done = std::move(done)](absl::Status st) {
      bool unpin = false;
      if (!id.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto p = by_pod_.find(key); p != by_pod_.end()) {
          Member& m = gangs_.at(p->second.first).slots[p->second.second];
          m.in_flight = false;
          if (st.ok()) m.bound = true;
        }
        unpin = SettleBindingLocked(key, binding.node, st);
      }
      // The slot is given back before the answer, which kube-scheduler may retry at once.
      if ((absl::IsNotFound(st) || unpin) && !id.empty()) {
        PodGoneAtBind(binding, absl::IsNotFound(st));
      }
      done(st.ok() ? "" : std::string(st.message()));
    });
  }
  if (open_barrier) Enqueue([this, id, generation] { CompleteBarrier(id, generation); });
}

bool GangLedger::SettleBindingLocked(const std::string& key, const std::string& node,
                                     const absl::Status& st) {
  if (st.ok()) {
    if (recently_bound_.size() >= kMaxHints) recently_bound_.clear();
    recently_bound_[key] = {node, SteadyNow()};
  }
  if (bound_at_rebuild_.erase(key) == 0) return false;
  // Failed: the pod is not on the node it was adopted on (or, for an answer lost in a timeout, may
  // be: then the watch adopts it again). It gives that slot back and filters again, next to the
  // members of its regrouped gang.
  return !st.ok() && !absl::IsNotFound(st);
}

void GangLedger::PodGoneAtBind(const PodBinding& b, bool gone) {
  // NotFound: the API server has no such pod. It was deleted, perhaps before its filter reached
  // us (kube-scheduler's cache lags the API server), so no deletion event will free its slot.
  PodInfo pod;
  pod.name = b.pod_name;
  pod.namespace_ = b.pod_namespace;
  pod.uid = b.pod_uid;
  ForgetPod(pod, gone);
}

bool GangLedger::AllAssignedLocked(const Entry& e) const {
  return std::all_of(e.slots.begin(), e.slots.end(),
                     [](const Member& m) { return m.assigned || m.bound; });
}

bool GangLedger::AllArrivedLocked(const Entry& e, const std::vector<std::string>& nodes) const {
  for (size_t i = 0; i < e.slots.size(); ++i) {
    const Member& m = e.slots[i];
    if (m.bound) continue;
    if (i >= nodes.size() || nodes[i].empty() || m.arrived_node != nodes[i]) return false;
  }
  return true;
}

void GangLedger::AnswerHeldLocked(absl::Time now, FailList* fail) {
  for (auto b = barriers_.begin(); b != barriers_.end();) {
    auto it = gangs_.find(*b);
    if (it == gangs_.end() || it->second.running) {
      b = barriers_.erase(b);
      continue;
    }
    Entry& e = it->second;
    if (e.binding) {
      // The barrier is open and each binding answers its own member, but a large gang's burst
      // can outlast kube-scheduler's httpTimeout: a member still waiting at the end of its
      // window is answered, and kube-scheduler drops it from its queue once the API server
      // shows it bound (a binding that fails is retried alone, as any other).
      for (Member& m : e.slots) {
        if (!m.held || m.held_until > now) continue;
        fail->emplace_back(std::move(m.held),
                           absl::StrCat("topogang: gang ", *b,
                                        " is being bound; this pod's binding to its reserved node "
                                        "is in progress"));
        m.held = nullptr;
      }
      ++b;
      continue;
    }
    std::vector<std::string> nodes = SlotNodesLocked(*b);
    int held = 0;
    for (size_t i = 0; i < e.slots.size(); ++i) {
      Member& m = e.slots[i];
      if (!m.held) continue;
      const std::string& node = i < nodes.size() ? nodes[i] : m.arrived_node;
      if (m.arrived_node != node) {
        // The slot moved under a held member: it must not bind to the old node.
        m.arrived_node.clear();
        fail->emplace_back(std::move(m.held),
                           absl::StrCat("topogang: the reservation of gang ", *b, " moved to node ",
                                        node, "; this pod will be scheduled there"));
        m.held = nullptr;
      } else if (m.held_until <= now) {
        fail->emplace_back(
            std::move(m.held),
            // No count of the members arrived: kube-scheduler writes the pod's PodScheduled
            // condition whenever this text changes (updatePod), one API write per retry of
            // every member through its client's QPS limit, and each write requeues the pod.
            absl::StrCat("topogang: waiting for the rest of gang ", *b, " (", e.spec.members,
                         " members) to reach bind; this pod keeps its slot on ", node,
                         " and is bound with its gang once every member has arrived"));
        m.held = nullptr;
      } else {
        ++held;
      }
    }
    if (held == 0) {
      b = barriers_.erase(b);
    } else {
      ++b;
    }
  }
}

void GangLedger::BindAsync(PodBinding b, std::function<void(absl::Status)> done) {
  pool_->Submit(std::move(b), std::move(done));
}

void GangLedger::CompleteBarrier(const std::string& id, uint64_t generation) {
  // What to bind, decided under the lock: every arrived member not bound yet, held or not (a
  // member whose request was answered while it waited is bound all the same: it passed
  // kube-scheduler's filters and PreBind for this node, and kube-scheduler drops a pod from its
  // queue once the API server shows it bound).
  struct Pending {
    PodBinding binding;
    size_t slot;
  };
  auto pending = std::make_shared<std::vector<Pending>>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gangs_.find(id);
    if (it == gangs_.end() || it->second.generation != generation) return;
    Entry& e = it->second;
    std::vector<std::string> nodes = SlotNodesLocked(id);
    if (!e.permit_barrier && !AllArrivedLocked(e, nodes)) {
      e.binding = false;  // a slot moved since the last member arrived: wait for it again
      return;
    }
    // Running from now on in the core: a health change proposes replacements instead of moving
    // members that are being bound, so the model and the bindings cannot disagree.
    state_.With([&](GangScheduler& s) { return s.Commit(id); }).IgnoreError();
    pending_.erase(id);
    fills_.erase(id);
    replans_.erase(id);
    excluded_.erase(id);
    hold_excluded_.erase(id);
    e.fill_deadline.reset();
    for (size_t i = 0; i < e.slots.size(); ++i) {
      Member& m = e.slots[i];
      if (m.bound) continue;
      // Permit barrier: members that have not reached bind yet bind alone when they do.
      if (i >= nodes.size() || m.arrived_node != nodes[i]) continue;
      PodBinding b = m.pod;
      b.node = nodes[i];
      m.in_flight = true;
      pending->push_back({std::move(b), i});
    }
  }
  // Counted under mu_: the last binding's callback marks the gang running before any reply of
  // it goes out, so a member deleted right after its answer is released as a running member.
  struct Outcome {
    size_t left;
    int failed = 0;
    std::string first_error;
    std::vector<PodBinding> failed_pods;
  };
  auto out = std::make_shared<Outcome>();
  out->left = pending->size();
  auto finish = [this, id, pending, out] {
    state_.Publish({0,
                    {},
                    out->failed ? "bind-failed" : "bind",
                    id,
                    "",
                    out->failed ? absl::StrCat(out->failed, " of ", pending->size(),
                                               " bindings failed: ", out->first_error)
                                : absl::StrCat(pending->size(), " pods bound")});
    if (out->failed) {
      Notify({"Warning",
              "GangBindFailed",
              id,
              absl::StrCat("topogang: ", out->failed, " of ", pending->size(), " bindings of gang ",
                           id, " failed: ", out->first_error,
                           "; kube-scheduler retries those members on their reserved nodes"),
              {out->failed_pods.front()}});
    }
  };
  // Bound pods hold their GPUs now, so the gang runs even if some binding calls failed; those
  // members are retried by kube-scheduler and bound alone to their reserved node.
  // Only this gang: every pod of it may have been deleted meanwhile and a new gang reserved under
  // its name, which must wait at its own barrier.
  auto mark_running = [this, id, generation] {
    auto it = gangs_.find(id);
    if (it == gangs_.end() || it->second.generation != generation) return;
    it->second.running = true;
    it->second.binding = false;
  };
  if (pending->empty()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      mark_running();
    }
    finish();
    return;
  }
  for (const Pending& p : *pending) {
    BindAsync(p.binding, [this, id, generation, p, out, finish, mark_running](absl::Status st) {
      BindCallback reply;
      bool last;
      bool unpin;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = gangs_.find(id);
        const std::string key =
            PodKey(p.binding.pod_uid, p.binding.pod_namespace, p.binding.pod_name);
        unpin = SettleBindingLocked(key, p.binding.node, st);
        // The slot may have been given up meanwhile (the pod was deleted): touch it only if it
        // is still this pod's.
        if (it != gangs_.end() && it->second.generation == generation &&
            p.slot < it->second.slots.size() && it->second.slots[p.slot].key == key) {
          Member& m = it->second.slots[p.slot];
          m.in_flight = false;
          if (st.ok()) m.bound = true;
          reply = std::move(m.held);
          m.held = nullptr;
        }
        if (!st.ok()) {
          ++out->failed;
          out->failed_pods.push_back(p.binding);
          if (out->first_error.empty()) out->first_error = std::string(st.message());
        }
      }
      // A slot given back before the gang's outcome is counted and published.
      if (absl::IsNotFound(st) || unpin) PodGoneAtBind(p.binding, absl::IsNotFound(st));
      {
        std::lock_guard<std::mutex> lock(mu_);
        last = --out->left == 0;
        if (last) mark_running();
      }
      if (reply) reply(st.ok() ? "" : std::string(st.message()));
      if (last) finish();
    });
  }
}

bool GangLedger::InMultiPodGang(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = by_pod_.find(uid);
  if (p == by_pod_.end()) return false;
  auto g = gangs_.find(p->second.first);
  return g != gangs_.end() && g->second.multi;
}

}  // namespace topogang
