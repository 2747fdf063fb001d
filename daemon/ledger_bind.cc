#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/gang_ledger.h"
#include "daemon/ledger_util.h"

namespace topogang {

void GangLedger::Bind(const PodBinding& args, BindCallback done) {
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
      done(st.ok() ? "" : std::string(st.message()));
    });
  }
  if (open_barrier) Enqueue([this, id] { CompleteBarrier(id); });
}

void GangLedger::CompleteBarrier(const std::string& id) {
  std::vector<PodBinding> pods;
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
  for (const PodBinding& b : pods) results.push_back(binder_.Bind(b));
  FailList replies;
  int failed = 0;
  std::string first_error;
  std::vector<PodBinding> failed_pods;
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

bool GangLedger::InMultiPodGang(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = by_pod_.find(uid);
  if (p == by_pod_.end()) return false;
  auto g = gangs_.find(p->second.first);
  return g != gangs_.end() && g->second.multi;
}

}  // namespace topogang
