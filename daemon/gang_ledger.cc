#include "daemon/gang_ledger.h"

#include <algorithm>
#include <tuple>
#include <utility>

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
  pool_ = std::make_unique<BindPool>(binder_, options_.bind_parallelism);
  state_.avoidance().set_slow_gang_gpus(options_.slow_node_gang_gpus);
  worker_ = std::thread([this] { WorkerLoop(); });
}

GangLedger::~GangLedger() {
  pool_.reset();  // bindings in flight finish; queued ones are answered "shutting down"
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
    }
  }
  RunFails(fails);
}

void GangLedger::SetBindingAllowed(bool allowed, const std::string& why) {
  pool_->SetOpen(allowed, why);
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

void GangLedger::DropEntryLocked(std::string id, const std::string& why, bool release_core,
                                 FailList* fail) {
  auto it = gangs_.find(id);
  if (it == gangs_.end()) return;
  const bool multi = it->second.multi;
  for (Member& m : it->second.slots) {
    if (m.held) fail->emplace_back(std::move(m.held), why);
    if (!m.assigned) continue;
    by_pod_.erase(m.key);
    // Its pod is still there and will ask again: it waits, as a refused one does (its deletion
    // then forgets the gang, and a gang started for it wakes it).
    if (multi && !m.bound) NoteWaitingPodLocked(id, m.key);
  }
  gangs_.erase(it);
  pending_.erase(id);
  fills_.erase(id);
  refused_repairs_.erase(id);
  elastic_.Forget(id);
  if (release_core) {
    state_.With([&](GangScheduler& s) { return s.Release(id); }).IgnoreError();
  }
}

void GangLedger::SyncOneLocked(std::string id, FailList* fail) {
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
  absl::Time last_pass = SteadyNow();
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
      absl::Time now = SteadyNow();  // real time that a wall-clock step does not move
      // Held requests past their time, and held members whose slot moved, are answered; the
      // reservation stays (only gangs with held requests are looked at).
      AnswerHeldLocked(now, &fails);
      // TTLs (30 s by default) and reservations the core dropped (health re-plans) are swept
      // once a second; filter and bind check their own gang on every call anyway.
      if (now - last_sweep >= options_.sweep) {
        last_sweep = now;
        // Bindings the watch reported before their answer came are never erased by the watch.
        absl::erase_if(recently_bound_,
                       [&](const auto& r) { return now - r.second.at > kWatchLag; });
        absl::erase_if(deleted_uids_, [&](const auto& d) { return now - d.second > kWatchLag; });
        uint64_t drops = 0;
        std::vector<std::string> ttl = state_.With([&](GangScheduler& s) {
          auto expired = s.ExpireReservations(state_.clock().Now());
          drops = s.drops();
          return expired;
        });
        for (const std::string& id : ttl) {
          auto it = gangs_.find(id);
          std::string why = absl::StrCat(
              "topogang: no member of gang ", id, " arrived for ",
              absl::FormatDuration(
                  state_.With([](GangScheduler& s) { return s.options().reservation_ttl; })),
              "; its reservation was released and the gang will be scheduled again");
          if (it != gangs_.end() && it->second.multi) {
            int arrived = 0;
            PodBinding first;
            for (const Member& m : it->second.slots) {
              arrived += !m.arrived_node.empty() || m.bound ? 1 : 0;
              if (first.pod_name.empty() && m.assigned) first = m.pod;
            }
            why = absl::StrCat(why, " (", arrived, " of ", it->second.spec.members,
                               " members had reached bind)");
            // One event per gang and transition, on one member pod, not one per member.
            if (!first.pod_name.empty())
              notices.push_back({"Warning", "GangExpired", id, why, {first}});
          }
          state_.Publish({0, {}, "expire", id, "", why});
        }
        // Time alone may have made room (the expiries above, a hold giving up, a tier lapsing):
        // run the queue, and wake the pods of what it starts.
        if (options_.queue_pass > absl::ZeroDuration() &&
            (!ttl.empty() || now - last_pass >= options_.queue_pass)) {
          last_pass = now;
          state_.Plan([&](GangScheduler& s) {
            admission_->Pass(s, state_.clock().Now(), ExclusionLocked(""), HoldExclusionLocked());
            return 0;
          });
          WakeStartedLocked("");
        }
        ExpireFillsLocked(&fails);
        // Looking up every pending gang in the core costs ~0.2 us each under the ledger lock;
        // do it only when the core dropped something since the last sweep.
        if (drops != synced_drops) {
          SyncWithCoreLocked(&fails);
          synced_drops = drops;
        }
        if (!refused_repairs_.empty()) WakeRefusedRepairsLocked(ttl);
        // What was learned about the nodes of gangs nothing waits for any more (no entry, no pod
        // known to wait, not queued, nothing reserved: a gang of one whose queue entry went
        // stale, pods deleted unseen): a job resubmitted under the same name is a new gang and
        // must not inherit the nodes the old one was refused. The queue is asked (a copy of its
        // arrivals) only when some gang is not known to wait otherwise.
        if (!excluded_.empty() || !hold_excluded_.empty()) {
          state_.With([&](GangScheduler& s) {
            auto unknown = [&](const auto& g) {
              return !gangs_.contains(g.first) && !waiting_pods_.contains(g.first) &&
                     s.Find(g.first) == nullptr;
            };
            if (std::none_of(excluded_.begin(), excluded_.end(), unknown) &&
                std::none_of(hold_excluded_.begin(), hold_excluded_.end(), unknown)) {
              return 0;
            }
            const auto queued = admission_->Arrivals(state_.clock().Now());
            auto forgotten = [&](const auto& g) { return unknown(g) && !queued.contains(g.first); };
            std::erase_if(excluded_, forgotten);
            std::erase_if(hold_excluded_, forgotten);
            return 0;
          });
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
  const absl::Time now = state_.clock().Now();
  const bool overload_option = options_.queue.LargeOverloadSwitch();
  std::tie(s.degraded_gangs, s.large_overload, s.queued) = state_.With([&](GangScheduler& core) {
    int n = 0;
    for (const auto& [name, rec] : core.gangs()) n += rec.slower_since_repair.empty() ? 0 : 1;
    return std::tuple{n, overload_option ? (admission_->LargeGangsOverload(now) ? 1 : 0) : -1,
                      admission_->Queued(now)};
  });
  return s;
}

QueueMemory GangLedger::QueueSnapshot() const {
  const absl::Time now = state_.clock().Now();
  return state_.With([&](GangScheduler&) {
    return QueueMemory{admission_->Arrivals(now), admission_->LargeOverloadSeen()};
  });
}

void GangLedger::SeedQueue(const QueueMemory& memory) {
  const absl::Time now = state_.clock().Now();
  state_.With([&](GangScheduler&) {
    admission_->Seed(memory.arrivals, now);
    admission_->SeedLargeOverload(memory.large_overload_seen, now);
  });
}

}  // namespace topogang
