// The waiting line in front of the planner, shared by the daemon and the simulator.
//
// Gangs start in (priority, arrival) order, and a gang that cannot start does not block those
// behind it (backfill) — otherwise one 1,024-GPU job would idle the cluster. Backfill alone
// starves large gangs behind a stream of small ones, so once the oldest large gang has waited
// past `starvation_threshold`, the queue holds GPUs for it in its best domain as they free up (a
// kHeld record in the GangScheduler, invisible to the planner for everybody else) until it fits.
// This is Slurm's "reserve for the head, backfill the rest" idea applied to one domain, so the
// held GPUs also keep the big gang's locality.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/gang.h"
#include "scheduler/gang_scheduler.h"

namespace topogang {

struct QueueOptions {
  absl::Duration starvation_threshold = absl::Minutes(10);
  // Only gangs of at least this many GPUs get holds: small ones fit into any gap soon.
  int hold_min_gpus = 64;
  // How many starved gangs may hold GPUs at once (the oldest first).
  int max_holds = 1;
  // Claim nodes for this many times the gang's size. A gang can start only when enough claimed
  // nodes are free; with heavy-tailed run times, waiting for the fastest of 1.5x the nodes is far
  // shorter than waiting for the slowest of exactly enough (and idles fewer held GPUs).
  double claim_factor = 1.5;
};

class GangQueue {
 public:
  explicit GangQueue(QueueOptions options = {}) : options_(options) {}

  struct Entry {
    GangSpec spec;
    absl::Time enqueued;
    int hold_domain = -1;  // domain the hold is in, once starved
  };

  // AlreadyExists if a gang of that name is waiting.
  absl::Status Enqueue(const GangSpec& gang, absl::Time now);
  // Drops a waiting gang and frees its hold, if any. False if it was not waiting.
  bool Remove(GangScheduler& sched, absl::string_view name);
  // Starts (GangScheduler::Reserve) every waiting gang that fits now, in order with backfill,
  // and maintains holds for starved gangs. Returns the names started, in start order; their
  // records are kReserved in `sched`.
  std::vector<std::string> Schedule(GangScheduler& sched, absl::Time now);

  const std::vector<Entry>& waiting() const { return waiting_; }
  bool Contains(absl::string_view name) const;
  size_t size() const { return waiting_.size(); }
  // Name of the kHeld record holding GPUs for `gang`.
  static std::string HoldName(absl::string_view gang);

 private:
  // Frees the hold of `e` (if any) so the planner can see those GPUs.
  void DropHold(GangScheduler& sched, const Entry& e);
  // Holds free healthy GPUs in e's target domain, up to what the gang needs. False when no
  // domain could ever hold the gang.
  bool GrowHold(GangScheduler& sched, Entry& e, absl::Time now);
  int PickHoldDomain(const GangScheduler& sched, const GangSpec& gang) const;

  QueueOptions options_;
  std::vector<Entry> waiting_;
};

}  // namespace topogang
