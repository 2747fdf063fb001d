#include "daemon/gang_ledger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/ledger_util.h"

namespace topogang {

GangLedger::GangLedger(DaemonState& state, Binder& binder, GangLedgerOptions options,
                       std::unique_ptr<Admission> admission)
    : state_(state),
      binder_(binder),
      options_(std::move(options)),
      admission_(admission ? std::move(admission)
                           : std::make_unique<QueueAdmission>(options_.queue)) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

GangLedger::~GangLedger() {
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

void GangLedger::FailHeldBinds(const std::string& why) {
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

void GangLedger::SetNotify(std::function<void(const GangNotice&)> notify) {
  std::lock_guard<std::mutex> lock(mu_);
  notify_ = std::move(notify);
}

void GangLedger::Notify(GangNotice n) {
  std::function<void(const GangNotice&)> f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    f = notify_;
  }
  if (f) f(n);
}

std::string GangLedger::PodKey(absl::string_view uid, absl::string_view ns,
                               absl::string_view name) {
  if (!uid.empty()) return std::string(uid);
  return absl::StrCat(ns, "/", name);
}

std::vector<std::string> GangLedger::SlotNodesLocked(const std::string& id) const {
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

// --- ledger maintenance --------------------------------------------------------------------------

void GangLedger::DropEntryLocked(const std::string& id, const std::string& why, bool release_core,
                                 FailList* fail) {
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

void GangLedger::SyncOneLocked(const std::string& id, FailList* fail) {
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

void GangLedger::SyncWithCoreLocked(FailList* fail) {
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

void GangLedger::Enqueue(Job job) {
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_.push_back(std::move(job));
  }
  jobs_cv_.notify_all();
}

void GangLedger::WorkerLoop() {
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
        std::vector<PodBinding> pods;
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

GangLedger::Stats GangLedger::GetStats() const {
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
