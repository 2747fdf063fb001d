#include "extender/extender_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace topogang {
namespace {

using FailList = std::vector<std::pair<BindCallback, std::string>>;

void RunFails(FailList& fails) {
  for (auto& [cb, why] : fails) {
    if (cb) cb(ExtenderBindingResult{why});
  }
  fails.clear();
}

// Every input node failed with one reason.
FilterVerdicts FailAll(const ExtenderArgs& args, std::string reason, bool unresolvable) {
  FilterVerdicts v;
  uint16_t k = v.AddReason(std::move(reason), unresolvable);
  // kube-scheduler never repeats a node; if a client does, it gets each answer once per mention.
  v.verdict.assign(args.names.size(), k);
  return v;
}

FilterVerdicts ErrorResult(const ExtenderArgs& args, const std::string& error) {
  FilterVerdicts v = FailAll(args, "topogang: " + error, /*unresolvable=*/true);
  v.error = error;
  return v;
}

// Passes exactly the nodes for which pass(i) is true; the rest fail with their reason.
template <typename Pass>
FilterVerdicts Split(const ExtenderArgs& args, Pass pass, std::string reason, bool unresolvable) {
  FilterVerdicts v;
  uint16_t k = v.AddReason(std::move(reason), unresolvable);
  v.verdict.resize(args.names.size());
  for (size_t i = 0; i < args.names.size(); ++i) v.verdict[i] = pass(i) ? 0 : k;
  return v;
}

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

}  // namespace

ExtenderService::ExtenderService(DaemonState& state, Binder& binder, ExtenderOptions options,
                                 std::unique_ptr<Admission> admission)
    : state_(state),
      binder_(binder),
      options_(std::move(options)),
      admission_(admission ? std::move(admission)
                           : std::make_unique<QueueAdmission>(options_.queue)) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

ExtenderService::~ExtenderService() {
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    stop_ = true;
  }
  jobs_cv_.notify_all();
  worker_.join();
  FailList fails;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, e] : gangs_) {
      for (Member& m : e.slots) {
        if (m.held) fails.emplace_back(std::move(m.held), "topogang is shutting down");
      }
    }
  }
  RunFails(fails);
}

void ExtenderService::FailHeldBinds(const std::string& why) {
  FailList fails;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, e] : gangs_) {
      if (e.binding) continue;  // bindings in flight answer themselves
      for (Member& m : e.slots) {
        if (m.held) fails.emplace_back(std::move(m.held), why);
      }
      e.barrier_deadline.reset();
    }
  }
  RunFails(fails);
}

void ExtenderService::SetNotify(std::function<void(const GangNotice&)> notify) {
  std::lock_guard<std::mutex> lock(mu_);
  notify_ = std::move(notify);
}

void ExtenderService::Notify(GangNotice n) {
  std::function<void(const GangNotice&)> f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    f = notify_;
  }
  if (f) f(n);
}

std::string ExtenderService::PodKey(absl::string_view uid, absl::string_view ns,
                                    absl::string_view name) {
  if (!uid.empty()) return std::string(uid);
  return absl::StrCat(ns, "/", name);
}

std::vector<std::string> ExtenderService::SlotNodesLocked(const std::string& id) {
  return state_.With([&](GangScheduler& s) {
    std::vector<std::string> out;
    const GangRecord* rec = s.Find(id);
    if (rec == nullptr) return out;
    for (const MemberPlacement& m : rec->placement.members) {
      out.push_back(m.node >= 0 ? s.cluster().node(m.node).name : "");
    }
    return out;
  });
}

// --- filter --------------------------------------------------------------------------------------

ExtenderFilterResult ExtenderService::Filter(const ExtenderArgs& args) {
  return ToFilterResult(args, FilterNodes(args));
}

FilterVerdicts ExtenderService::FilterNodes(const ExtenderArgs& args) {
  auto pod = ParsePod(args.pod, options_.gpu_resource);
  if (!pod.ok()) return ErrorResult(args, std::string(pod.status().message()));
  auto membership = ParseGangMembership(pod->namespace_, pod->labels, pod->annotations);
  if (!membership.ok()) {
    return ErrorResult(args, absl::StrCat("pod ", pod->Key(), ": ", membership.status().message()));
  }
  const std::string key = PodKey(pod->uid, pod->namespace_, pod->name);
  if (!membership->has_value() && pod->gpus == 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (passthrough_.size() > 100000) passthrough_.clear();
      passthrough_.insert(key);
    }
    return Split(
        args, [](size_t) { return true; }, "", false);
  }
  if (pod->gpus == 0) {
    return ErrorResult(args, absl::StrCat("pod ", pod->Key(), " is in gang ", (*membership)->id,
                                          " but requests no ", options_.gpu_resource,
                                          "; gang members must request GPUs"));
  }
  const bool multi = membership->has_value() && (*membership)->size > 1;
  GangSpec spec;
  if (membership->has_value()) {
    spec = (*membership)->ToSpec(static_cast<int>(pod->gpus));
  } else {
    spec.name = SingletonGangId(pod->namespace_, pod->name);
    spec.members = 1;
    spec.gpus_per_member = static_cast<int>(pod->gpus);
  }
  const std::string id = spec.name;
  FailList fails;
  FilterVerdicts result;
  bool decided = false;
  std::optional<GangNotice> notice;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SyncOneLocked(id, &fails);
    if (fills_.contains(id)) ExpireFillsLocked(&fails);
    auto it = gangs_.find(id);
    if (it != gangs_.end()) {
      const GangSpec& have = it->second.spec;
      if (have.members != spec.members || have.gpus_per_member != spec.gpus_per_member ||
          have.required_tier != spec.required_tier || have.slice.members != spec.slice.members ||
          have.slice.tier != spec.slice.tier) {
        decided = true;
        result = ErrorResult(
            args, absl::StrCat("pod ", pod->Key(), " says gang ", id, " is ", spec.members,
                               " pods x ", spec.gpus_per_member, " GPUs",
                               spec.required_tier.empty() ? "" : " within one ", spec.required_tier,
                               ", but its members so far say ", have.members, " pods x ",
                               have.gpus_per_member, " GPUs",
                               have.required_tier.empty() ? "" : " within one ", have.required_tier,
                               "; all members must carry the same values"));
      }
    } else {
      absl::Time now = state_.clock().Now();
      absl::Status st = state_.With([&](GangScheduler& s) -> absl::Status {
        auto r = admission_->Admit(s, spec, now);
        if (!r.ok() || multi) return r.status();
        // A gang of one needs its node among those kube-scheduler offered (its own filters may
        // have rejected the planner's pick); otherwise take the best fit among the offered.
        const Cluster& c = s.cluster();
        int planned = (*r)->placement.members[0].node;
        for (const std::string& n : args.names) {
          if (n == c.node(planned).name) return absl::OkStatus();
        }
        (void)s.Release(id);
        return ReserveBestOffered(s, spec, args.names, now);
      });
      if (!st.ok()) {
        std::string reason = absl::StrCat("topogang: ", GangLabel(spec, multi),
                                          " cannot be placed now: ", st.message());
        // A gang of one may still fit after preempting on one node; a real gang cannot be made
        // to fit node by node, so its nodes are unresolvable for preemption.
        result = FailAll(args, reason, /*unresolvable=*/multi);
        decided = true;
        state_.Publish({0, {}, "unschedulable", id, "", std::string(st.message())});
      } else {
        Entry e;
        e.spec = spec;
        e.multi = multi;
        e.slots.resize(spec.members);
        it = gangs_.emplace(id, std::move(e)).first;
        pending_.insert(id);
        std::vector<std::string> nodes = SlotNodesLocked(id);
        std::vector<std::string> distinct = nodes;
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        state_.Publish({0,
                        {},
                        "reserve",
                        id,
                        distinct.size() == 1 ? distinct[0] : "",
                        absl::StrCat(spec.members, "x", spec.gpus_per_member, " GPUs on ",
                                     distinct.size(), " nodes")});
        if (multi) {
          notice = GangNotice{"Normal",
                              "GangReserved",
                              id,
                              absl::StrCat("topogang reserved ", spec.total_gpus(), " GPUs on ",
                                           distinct.size(), " nodes for ", GangLabel(spec, multi)),
                              {ExtenderBindingArgs{pod->name, pod->namespace_, pod->uid, ""}}};
        }
      }
    }
    if (!decided && it != gangs_.end() && it->second.adopted && !it->second.binding) {
      // A gang found partly bound (restart mid-bind): its missing members get GPUs next to the
      // bound ones, all of them or none.
      auto p = by_pod_.find(key);
      if (p == by_pod_.end() || p->second.first != id) {
        if (absl::Status st = ReserveMissingLocked(id, it->second); !st.ok()) {
          int bound = 0;
          for (const Member& m : it->second.slots) bound += m.bound && !m.gone ? 1 : 0;
          result =
              FailAll(args,
                      absl::StrCat("topogang: ", GangLabel(it->second.spec, true), " has ", bound,
                                   " members running; its missing members cannot be "
                                   "placed next to them now: ",
                                   st.message()),
                      /*unresolvable=*/true);
          decided = true;
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
      }
      if (slot < 0) {
        // The first free slot whose node kube-scheduler offered: look up only the free slots'
        // nodes (few) while scanning the offered names once.
        absl::flat_hash_map<absl::string_view, int> wanted;
        int free_slots = 0;
        for (int i = 0; i < static_cast<int>(e.slots.size()); ++i) {
          if (e.slots[i].assigned || i >= static_cast<int>(nodes.size())) continue;
          ++free_slots;
          wanted.emplace(nodes[i], i);  // keeps the lowest slot per node
        }
        for (const std::string& n : args.names) {
          auto w = wanted.find(n);
          if (w != wanted.end() && (slot < 0 || w->second < slot)) slot = w->second;
        }
        if (slot < 0) {
          std::string reason =
              free_slots == 0
                  ? absl::StrCat("topogang: ", GangLabel(e.spec, e.multi),
                                 " already has a pod for every member; this pod is one too many")
                  : absl::StrCat("topogang: ", GangLabel(e.spec, e.multi),
                                 " holds GPUs on nodes that kube-scheduler did not offer for this "
                                 "pod (its own filters rejected them, or percentageOfNodesToScore "
                                 "is below 100)");
          result = FailAll(args, reason, /*unresolvable=*/true);
          decided = true;
        } else {
          Member& m = e.slots[slot];
          m.assigned = true;
          m.key = key;
          m.pod = ExtenderBindingArgs{pod->name, pod->namespace_, pod->uid, nodes[slot]};
          by_pod_[key] = {id, slot};
        }
      }
      if (!decided) {
        const std::string node = slot < static_cast<int>(nodes.size()) ? nodes[slot] : "";
        // One pass over the offered names: steer to the reserved node, or, when it was not
        // offered, fail every node with that reason instead.
        bool offered = false;
        result = Split(
            args,
            [&](size_t i) {
              bool match = args.names[i] == node;
              offered |= match;
              return match;
            },
            absl::StrCat("topogang: steered to ", node, e.multi ? " (gang " + id + ")" : ""),
            /*unresolvable=*/true);
        if (!offered) {
          result = FailAll(args,
                           absl::StrCat("topogang: this pod's GPUs are reserved on node ", node,
                                        ", which kube-scheduler did not offer"),
                           /*unresolvable=*/true);
        }
      }
    }
  }
  RunFails(fails);
  if (notice) Notify(*notice);
  return result;
}

// --- prioritize ----------------------------------------------------------------------------------

absl::StatusOr<std::vector<HostPriority>> ExtenderService::Prioritize(const ExtenderArgs& args) {
  auto pod = ParsePod(args.pod, options_.gpu_resource);
  if (!pod.ok()) return pod.status();
  std::string node;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto p = by_pod_.find(PodKey(pod->uid, pod->namespace_, pod->name));
    if (p != by_pod_.end()) {
      std::vector<std::string> nodes = SlotNodesLocked(p->second.first);
      if (p->second.second < static_cast<int>(nodes.size())) node = nodes[p->second.second];
    }
  }
  std::vector<HostPriority> out;
  out.reserve(args.names.size());
  for (const std::string& n : args.names) {
    out.push_back({n, !node.empty() && n == node ? 10 : 0});
  }
  return out;
}

// --- bind ----------------------------------------------------------------------------------------

void ExtenderService::Bind(const ExtenderBindingArgs& args, BindCallback done) {
  const std::string key = PodKey(args.pod_uid, args.pod_namespace, args.pod_name);
  FailList fails;
  bool direct = false;
  bool open_barrier = false;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto q = by_pod_.find(key); q != by_pod_.end()) SyncOneLocked(q->second.first, &fails);
    auto p = by_pod_.find(key);
    if (p == by_pod_.end()) {
      if (passthrough_.contains(key)) {
        direct = true;
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
      Member& m = e.slots[p->second.second];
      std::vector<std::string> nodes = SlotNodesLocked(id);
      const std::string node =
          p->second.second < static_cast<int>(nodes.size()) ? nodes[p->second.second] : "";
      if (m.bound) {
        if (node == args.node) {
          fails.emplace_back(std::move(done), "");  // a retry of a bind that already succeeded
        } else {
          fails.emplace_back(std::move(done), absl::StrCat("pod is already bound to ", node));
        }
      } else if (node != args.node) {
        fails.emplace_back(std::move(done), absl::StrCat("topogang reserved node ", node,
                                                         " for this pod, not ", args.node,
                                                         " (the reservation moved); it will be "
                                                         "scheduled again"));
      } else if (e.running) {
        // The rest of the gang is bound already (this member's first bind failed): bind it alone.
        m.pod = args;
        direct = true;
      } else if (e.binding) {
        fails.emplace_back(std::move(done), "the gang's bindings are in progress; retry");
      } else {
        if (m.held) fails.emplace_back(std::move(m.held), "superseded by a newer bind request");
        m.held = std::move(done);
        m.pod = args;
        if (!e.barrier_deadline) {
          e.barrier_deadline = absl::Now() + options_.bind_window;
          barriers_.insert(id);
        }
        // A regrouped gang's bound members are already there: wait only for the missing ones.
        bool all = std::all_of(e.slots.begin(), e.slots.end(),
                               [](const Member& x) { return x.held != nullptr || x.bound; });
        if (all) {
          e.binding = true;
          open_barrier = true;
        }
      }
    }
  }
  RunFails(fails);
  if (direct) {
    Enqueue([this, args, key, id, done = std::move(done)] {
      absl::Status st = binder_.Bind(args);
      if (st.ok() && !id.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto p = by_pod_.find(key); p != by_pod_.end()) {
          gangs_.at(p->second.first).slots[p->second.second].bound = true;
        }
      }
      done(ExtenderBindingResult{st.ok() ? "" : std::string(st.message())});
    });
  }
  if (open_barrier) Enqueue([this, id] { CompleteBarrier(id); });
}

void ExtenderService::CompleteBarrier(const std::string& id) {
  std::vector<ExtenderBindingArgs> pods;
  std::vector<size_t> slots;  // the members at the barrier (a regrouped gang's are not all)
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gangs_.find(id);
    if (it == gangs_.end()) return;
    for (size_t i = 0; i < it->second.slots.size(); ++i) {
      const Member& m = it->second.slots[i];
      if (m.held == nullptr) continue;
      pods.push_back(m.pod);
      slots.push_back(i);
    }
  }
  // Bind outside the lock: this is API server I/O.
  std::vector<absl::Status> results;
  results.reserve(pods.size());
  for (const ExtenderBindingArgs& b : pods) results.push_back(binder_.Bind(b));
  FailList replies;
  int failed = 0;
  std::string first_error;
  std::vector<ExtenderBindingArgs> failed_pods;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gangs_.find(id);
    if (it == gangs_.end()) return;
    Entry& e = it->second;
    for (size_t i = 0; i < slots.size() && slots[i] < e.slots.size(); ++i) {
      Member& m = e.slots[slots[i]];
      if (results[i].ok()) {
        m.bound = true;
      } else {
        ++failed;
        failed_pods.push_back(m.pod);
        if (first_error.empty()) first_error = std::string(results[i].message());
      }
      replies.emplace_back(std::move(m.held),
                           results[i].ok() ? "" : std::string(results[i].message()));
      m.held = nullptr;
    }
    // Bound pods hold their GPUs now, so the gang runs even if some binding calls failed; those
    // members are retried by kube-scheduler and bound alone to their reserved node.
    e.running = true;
    e.binding = false;
    e.barrier_deadline.reset();
    e.fill_deadline.reset();
    pending_.erase(id);
    fills_.erase(id);
    state_.With([&](GangScheduler& s) { return s.Commit(id); }).IgnoreError();
  }
  state_.Publish({0,
                  {},
                  failed ? "bind-failed" : "bind",
                  id,
                  "",
                  failed
                      ? absl::StrCat(failed, " of ", pods.size(), " bindings failed: ", first_error)
                      : absl::StrCat(pods.size(), " pods bound")});
  RunFails(replies);
  if (failed) {
    Notify({"Warning", "GangBindFailed", id,
            absl::StrCat("topogang: ", failed, " of ", pods.size(), " bindings of gang ", id,
                         " failed: ", first_error),
            failed_pods});
  }
}

// --- preempt -------------------------------------------------------------------------------------

ExtenderPreemptionResult ExtenderService::Preempt(const ExtenderPreemptionArgs& args) {
  ExtenderPreemptionResult out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [node, victims] : args.victims) {
    bool protect = false;
    for (size_t i = 0; i < victims.uids.size() && !protect; ++i) {
      auto p = by_pod_.find(victims.uids[i]);
      if (p != by_pod_.end()) {
        auto g = gangs_.find(p->second.first);
        protect = g != gangs_.end() && g->second.multi;
      }
      if (!protect && i < victims.pods.size()) {
        // Full form: the victim's own labels say whether it belongs to a gang.
        auto info = ParsePod(victims.pods[i], options_.gpu_resource);
        if (info.ok()) {
          auto m = ParseGangMembership(info->namespace_, info->labels, info->annotations);
          protect = m.ok() && m->has_value() && (*m)->size > 1;
        }
      }
    }
    if (protect) continue;  // evicting one member would break a running gang: drop the node
    Victims v;
    v.uids = victims.uids;
    v.num_pdb_violations = victims.num_pdb_violations;
    out.victims[node] = std::move(v);
  }
  return out;
}

// --- ledger maintenance --------------------------------------------------------------------------

void ExtenderService::DropEntryLocked(const std::string& id, const std::string& why,
                                      bool release_core, FailList* fail) {
  auto it = gangs_.find(id);
  if (it == gangs_.end()) return;
  for (Member& m : it->second.slots) {
    if (m.held) fail->emplace_back(std::move(m.held), why);
    if (m.assigned) by_pod_.erase(m.key);
  }
  gangs_.erase(it);
  pending_.erase(id);
  fills_.erase(id);
  if (release_core) {
    state_.With([&](GangScheduler& s) { return s.Release(id); }).IgnoreError();
  }
}

void ExtenderService::SyncOneLocked(const std::string& id, FailList* fail) {
  if (!pending_.contains(id)) return;
  bool gone = state_.With([&](GangScheduler& s) { return s.Find(id) == nullptr; });
  if (!gone) return;
  DropEntryLocked(id,
                  absl::StrCat("topogang: the reservation of ", id,
                               " was dropped (nodes became unhealthy or it expired); the gang "
                               "will be scheduled again"),
                  /*release_core=*/false, fail);
  state_.Publish({0, {}, "release", id, "", "reservation no longer held by the core"});
}

void ExtenderService::SyncWithCoreLocked(FailList* fail) {
  std::vector<std::string> gone;
  state_.With([&](GangScheduler& s) {
    for (const std::string& id : pending_) {
      if (s.Find(id) == nullptr) gone.push_back(id);
    }
    return 0;
  });
  for (const std::string& id : gone) {
    DropEntryLocked(id,
                    absl::StrCat("topogang: the reservation of ", id,
                                 " was dropped (nodes became unhealthy or it expired); the "
                                 "gang will be scheduled again"),
                    /*release_core=*/false, fail);
    state_.Publish({0, {}, "release", id, "", "reservation no longer held by the core"});
  }
}

void ExtenderService::Enqueue(Job job) {
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_.push_back(std::move(job));
  }
  jobs_cv_.notify_all();
}

void ExtenderService::WorkerLoop() {
  absl::Time last_sweep = absl::InfinitePast();
  uint64_t synced_drops = 0;
  std::unique_lock<std::mutex> lock(jobs_mu_);
  while (!stop_) {
    if (!jobs_.empty()) {
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
      continue;
    }
    jobs_cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.tick));
    if (stop_) break;
    lock.unlock();
    // Expire barriers past their window and reservations past their TTL.
    FailList fails;
    std::vector<GangNotice> notices;
    {
      std::lock_guard<std::mutex> l(mu_);
      absl::Time now = absl::Now();
      std::vector<std::string> expired;
      // Only gangs with an open barrier have a deadline (few): the sweep must not cost
      // O(reservations) under the ledger lock ten times a second.
      for (auto b = barriers_.begin(); b != barriers_.end();) {
        auto it = gangs_.find(*b);
        if (it == gangs_.end() || !it->second.barrier_deadline || it->second.running) {
          b = barriers_.erase(b);
          continue;
        }
        const Entry& e = it->second;
        if (!e.binding && *e.barrier_deadline <= now) expired.push_back(*b);
        ++b;
      }
      for (const std::string& id : expired) {
        Entry& e = gangs_.at(id);
        int held = 0;
        std::vector<ExtenderBindingArgs> pods;
        for (const Member& m : e.slots) {
          if (m.held || m.bound) ++held;                      // a regrouped gang's bound members
          if (m.assigned && !m.bound) pods.push_back(m.pod);  // are not the ones waiting
        }
        std::string why =
            absl::StrCat("topogang: only ", held, " of ", e.spec.members, " pods of gang ", id,
                         " reached bind within ", absl::FormatDuration(options_.bind_window),
                         "; its reservation was released and the gang will be scheduled again");
        notices.push_back({"Warning", "GangExpired", id, why, pods});
        if (e.adopted) {
          ShrinkToBoundLocked(id, why, &fails);  // its bound members keep running
        } else {
          DropEntryLocked(id, why, /*release_core=*/true, &fails);
        }
        state_.Publish({0, {}, "expire", id, "", why});
      }
      // TTLs (30 s by default) and reservations the core dropped (health re-plans) are swept
      // once a second; filter and bind check their own gang on every call anyway.
      if (now - last_sweep >= absl::Seconds(1)) {
        last_sweep = now;
        uint64_t drops = 0;
        std::vector<std::string> ttl = state_.With([&](GangScheduler& s) {
          auto expired = s.ExpireReservations(state_.clock().Now());
          drops = s.drops();
          return expired;
        });
        for (const std::string& id : ttl) {
          state_.Publish({0, {}, "expire", id, "", "reservation TTL passed"});
        }
        ExpireFillsLocked(&fails);
        // Looking up every pending gang in the core costs ~0.2 us each under the ledger lock;
        // do it only when the core dropped something since the last sweep.
        if (drops != synced_drops) {
          SyncWithCoreLocked(&fails);
          synced_drops = drops;
        }
      }
    }
    RunFails(fails);
    for (GangNotice& n : notices) Notify(std::move(n));
    lock.lock();
  }
}

// --- cluster sync --------------------------------------------------------------------------------

absl::StatusOr<MemberPlacement> ExtenderService::TakeBoundGpusLocked(const PodInfo& pod) {
  // Take free GPUs on its node; if reservations hold them, those reservations yield (the API
  // server is the truth: the pod runs there) and are re-planned on their next filter.
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
        for (const auto& [gid, rec] : s.gangs()) {
          if (rec.state != GangState::kReserved) continue;
          for (const MemberPlacement& mp : rec.placement.members) {
            if (mp.node == n) {
              displaced.push_back(gid);
              break;
            }
          }
        }
        for (const std::string& gid : displaced) s.Release(gid).IgnoreError();
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

std::optional<std::string> ExtenderService::AdoptIntoGangLocked(const PodInfo& pod,
                                                                const GangMembership& gang,
                                                                std::optional<std::string>* error) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  const GangSpec spec = gang.ToSpec(static_cast<int>(pod.gpus));
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
  mem.key = key;
  mem.assigned = mem.bound = true;
  mem.pod = {pod.name, pod.namespace_, pod.uid, pod.node_name};
  by_pod_[key] = {id, slot};
  return std::nullopt;
}

std::optional<std::string> ExtenderService::AdoptBoundLocked(const PodInfo& pod) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  const std::string id = SingletonGangId(pod.namespace_, pod.name);
  auto m = ParseGangMembership(pod.namespace_, pod.labels, pod.annotations);
  const bool multi = m.ok() && m->has_value() && (*m)->size > 1;
  if (multi) {
    std::optional<std::string> error;
    std::optional<std::string> disagree = AdoptIntoGangLocked(pod, **m, &error);
    if (!disagree) return error;
    // The pod runs whatever its labels say: adopt it alone, as a member of no gang.
    state_.Publish({0,
                    {},
                    "adopt",
                    (*m)->id,
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
    Placement p;
    p.members.push_back(*placed);
    return s.Adopt(spec, std::move(p), GangState::kRunning, state_.clock().Now(),
                   /*require_healthy=*/false);
  });
  if (!st.ok()) return std::string(st.message());
  Entry e;
  e.spec.name = id;
  e.spec.gpus_per_member = static_cast<int>(pod.gpus);
  e.multi = multi;
  e.running = true;
  Member mem;
  mem.key = key;
  mem.assigned = mem.bound = true;
  mem.pod = {pod.name, pod.namespace_, pod.uid, pod.node_name};
  e.slots.push_back(std::move(mem));
  gangs_[id] = std::move(e);
  by_pod_[key] = {id, 0};
  return std::nullopt;
}

absl::Status ExtenderService::ReserveMissingLocked(const std::string& id, Entry& e) {
  std::vector<int> missing;
  absl::Time now = state_.clock().Now();
  absl::Status st = state_.With([&](GangScheduler& s) -> absl::Status {
    const GangRecord* rec = s.Find(id);
    if (rec == nullptr) return absl::InternalError("the gang's running members are not recorded");
    const auto& members = rec->placement.members;
    std::vector<int> anchors;
    for (const MemberPlacement& mp : members) {
      if (mp.node >= 0) anchors.push_back(mp.node);
    }
    for (int i = 0; i < static_cast<int>(e.slots.size()); ++i) {
      if (e.slots[i].assigned) continue;
      if (i < static_cast<int>(members.size()) && members[i].node >= 0) continue;  // reserved
      missing.push_back(i);
    }
    if (missing.empty()) return absl::OkStatus();
    auto near = s.planner().PlanNear(e.spec, static_cast<int>(missing.size()), anchors);
    if (!near.ok()) return near.status();
    if (near->size() != missing.size()) return absl::InternalError("planner returned too few");
    for (size_t k = 0; k < missing.size(); ++k) {
      absl::Status a = s.AdoptMember(id, missing[k], (*near)[k]);
      if (!a.ok()) {
        for (size_t j = 0; j < k; ++j) s.ReleaseMember(id, missing[j]).IgnoreError();
        return a;
      }
    }
    return absl::OkStatus();
  });
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
  return absl::OkStatus();
}

void ExtenderService::ShrinkToBoundLocked(const std::string& id, const std::string& why,
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
        any_running |= !m.gone;
        continue;
      }
      if (m.held) fail->emplace_back(std::move(m.held), why);
      if (m.assigned) by_pod_.erase(m.key);
      m = Member{};
      if (i < size && rec->placement.members[i].node >= 0) s.ReleaseMember(id, i).IgnoreError();
    }
    return 0;
  });
  e.running = true;
  e.binding = false;
  e.barrier_deadline.reset();
  e.fill_deadline.reset();
  fills_.erase(id);
  if (!any_running) {
    DropEntryLocked(id, why, /*release_core=*/true, fail);
    state_.Publish({0, {}, "release", id, "", "no member pod of the gang is running"});
  }
}

void ExtenderService::ExpireFillsLocked(FailList* fail) {
  absl::Time now = state_.clock().Now();
  for (auto f = fills_.begin(); f != fills_.end();) {
    const std::string id = *f++;
    auto it = gangs_.find(id);
    if (it == gangs_.end() || it->second.running || !it->second.fill_deadline) {
      fills_.erase(id);
      continue;
    }
    const Entry& e = it->second;
    // An open barrier has its own (shorter) window.
    if (e.binding || e.barrier_deadline || *e.fill_deadline > now) continue;
    ShrinkToBoundLocked(id,
                        absl::StrCat("topogang: the missing members of gang ", id,
                                     " did not reach bind before their reservation expired"),
                        fail);
    state_.Publish({0, {}, "expire", id, "", "missing members' reservation TTL passed"});
  }
}

void ExtenderService::ObservePod(const PodInfo& pod) {
  if (pod.Terminal()) {
    PodDeleted(pod);
    return;
  }
  if (pod.node_name.empty() || pod.gpus == 0) return;
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto p = by_pod_.find(key); p != by_pod_.end()) {
    const std::string id = p->second.first;
    Entry& e = gangs_.at(id);
    Member& m = e.slots[p->second.second];
    if (m.bound || e.binding) return;  // ours
    // Bound by someone else while we held a slot for it: fall through to adopt, dropping ours.
    FailList fails;
    if (e.adopted) {
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
  }
}

void ExtenderService::PodDeleted(const PodInfo& pod) {
  const std::string key = PodKey(pod.uid, pod.namespace_, pod.name);
  std::lock_guard<std::mutex> lock(mu_);
  passthrough_.erase(key);
  auto p = by_pod_.find(key);
  if (p == by_pod_.end()) return;
  const std::string id = p->second.first;
  const int slot = p->second.second;
  Entry& e = gangs_.at(id);
  if (!e.running && !e.adopted) return;  // pending gangs are cleaned up by the barrier / TTL
  Member& m = e.slots[slot];
  if (e.adopted) {
    // A member still to bind: its reservation goes with the barrier or the TTL.
    if (!m.bound) return;
    // Regrouped gangs were singletons before; like them, a member's GPUs come back with its pod,
    // and its slot is free again: a replacement pod filters next to the surviving members.
    state_.With([&](GangScheduler& s) { return s.ReleaseMember(id, slot); }).IgnoreError();
    by_pod_.erase(key);
    m = Member{};
  } else {
    m.gone = true;
  }
  bool all_gone = std::all_of(e.slots.begin(), e.slots.end(),
                              [](const Member& x) { return x.gone || !x.bound; });
  if (all_gone) {
    FailList fails;
    DropEntryLocked(id, "topogang: every running member of the gang is gone; filter again",
                    /*release_core=*/true, &fails);
    state_.Publish({0, {}, "release", id, "", "every member pod finished or was deleted"});
    if (!fails.empty()) {
      auto shared = std::make_shared<FailList>(std::move(fails));
      Enqueue([shared] { RunFails(*shared); });
    }
  }
}

absl::Status ExtenderService::Rebuild(Cluster cluster, const std::vector<PodInfo>& pods) {
  FailList fails;
  absl::Status result = absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Pending gangs survive a rebuild (their pods keep their slots); running ones are rebuilt
    // from what the API server says is bound.
    std::map<std::string, Entry> pending;
    for (auto& [id, e] : gangs_) {
      if (e.adopted) {
        // Regrouped again from the pod list below; its missing members filter again.
        for (Member& m : e.slots) {
          if (m.held) {
            fails.emplace_back(std::move(m.held),
                               "topogang: the cluster changed while the gang's missing members "
                               "waited to bind; retry");
          }
        }
        continue;
      }
      if (!e.running) pending.emplace(id, std::move(e));
    }
    gangs_.clear();
    by_pod_.clear();
    pending_.clear();
    fills_.clear();
    GangScheduler fresh(std::move(cluster),
                        state_.With([](GangScheduler& s) { return s.options(); }));
    state_.ReplaceScheduler(std::move(fresh));
    for (const PodInfo& p : pods) {
      if (p.Terminal() || p.node_name.empty() || p.gpus == 0) continue;
      if (auto err = AdoptBoundLocked(p)) {
        state_.Publish(
            {0, {}, "adopt-failed", SingletonGangId(p.namespace_, p.name), p.node_name, *err});
      }
    }
    for (auto& [id, e] : pending) {
      absl::Time now = state_.clock().Now();
      absl::Status st =
          state_.With([&](GangScheduler& s) { return admission_->Admit(s, e.spec, now).status(); });
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
      e.barrier_deadline.reset();
      e.binding = false;
      pending_.insert(id);
      gangs_.emplace(id, std::move(e));
    }
  }
  RunFails(fails);
  return result;
}

ExtenderService::Stats ExtenderService::GetStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  for (const auto& [id, e] : gangs_) {
    if (e.running)
      ++s.running_gangs;
    else
      ++s.reserved_gangs;
    for (const Member& m : e.slots) s.held_binds += m.held ? 1 : 0;
  }
  return s;
}

}  // namespace topogang
