// Base for all-or-nothing policies: a FIFO queue with one of two disciplines, running-job
// bookkeeping, and failure handling. Subclasses supply only where a gang goes.
//
//   kSkipBlocked  "best-effort FIFO": walk the queue in order and start every job that fits;
//                 a job that does not fit is skipped (Kueue BestEffortFIFO, Volcano allocate,
//                 coscheduling's activeQ). Small jobs can overtake a large one forever.
//   kBackfill     FIFO with EASY backfill: the first job that does not fit gets a reservation
//                 at the earliest time enough of the running jobs end (its "shadow"); later jobs
//                 start only if they end before the shadow or fit in what the head leaves spare
//                 (Slurm's backfill scheduler; our own queue until scheduler/queue_policy.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "sim/policy.h"

namespace topogang::sim {

// How GangPolicy's kBackfill plans, as Slurm's sched/backfill is configured (slurm.conf.5
// SchedulerParameters; defaults in `slurm:src/plugins/sched/backfill/backfill.c`). The defaults
// here are the simulator's original, idealised backfill: every event, the whole queue, exact
// run times.
struct BackfillParams {
  // Seconds between backfill passes (bf_interval). Between passes only the main scheduler
  // runs: jobs start in strict queue order until the first that does not fit.
  double interval_s = 0;
  double window_s = kNever;    // bf_window: no reservation starting later than this
  int max_job_test = 1 << 30;  // bf_max_job_test: jobs considered per pass
  // Plan with the users' time limits (the trace's estimate, else max_time_s) instead of the
  // real run times; a job past its limit is planned to end now.
  bool use_time_limits = false;
  double max_time_s = 7 * 86400.0;  // the partition's MaxTime, for jobs without a limit
};

class GangPolicy : public Policy {
 public:
  enum class Queueing { kSkipBlocked, kBackfill };

  void Enqueue(int job, double now) override;
  std::vector<Started> Schedule(double now) override;
  void Finish(int job) override;
  HealthResult SetNodeDown(int node, bool down, bool fail, double now) override;
  // The next backfill pass, while jobs wait and something changed since the last one.
  double NextWakeup() const override;

 protected:
  GangPolicy(PolicyContext ctx, Queueing q, BackfillParams bf = BackfillParams())
      : ctx_(std::move(ctx)), queueing_(q), bf_(bf) {}
  const SimJob& job(int j) const { return (*ctx_.jobs)[j]; }
  // Time of the current Schedule / SetNodeDown call, and when a job first entered the queue.
  double now() const { return now_; }
  double FirstEnqueued(int j) const;
  // Members of a running job (nullptr when it is not running).
  const std::vector<MemberPlacement>* RunningMembers(int j) const;

  // Where `job` would go now (nothing changes), or nullopt when it does not fit. By default the
  // job's GPU model (`sku`), or on a cluster of several models each model in turn, first fit
  // (Kueue's flavor order; a Slurm `--gres=gpu:<type>` / Volcano nodeSelector per model): a gang
  // never mixes models.
  virtual std::optional<std::vector<MemberPlacement>> Place(int job);
  // Where `job` would go on nodes of model `sku` only (kAnySku: the cluster has one model).
  virtual std::optional<std::vector<MemberPlacement>> PlaceSku(int /*job*/, int /*sku*/) {
    return std::nullopt;
  }
  // The models a job may use, in the order they are tried.
  std::vector<int> CandidateSkus(int job) const;
  // Marks the members' GPUs used / free.
  virtual void Take(int job, const std::vector<MemberPlacement>& members) = 0;
  virtual void Give(int job, const std::vector<MemberPlacement>& members) = 0;
  virtual void SetCordoned(int node, bool cordoned) = 0;
  // A failed node hit running `job`: repair it in place (topogang) or return false (kill).
  virtual bool Repair(int /*job*/, int /*node*/, double /*now*/,
                      std::vector<MemberPlacement>* /*members*/) {
    return false;
  }
  // Level a job's reservation shadow is computed at (its required tier, else the cluster).
  int RequiredLevel(int job) const;
  // Something a placement depends on changed with time alone (e.g. a job's wait passed Slurm's
  // max_switch_wait): the next Schedule re-evaluates the whole queue.
  void Invalidate() {
    freed_ = true;
    bf_dirty_ = true;
  }

  PolicyContext ctx_;

 private:
  struct Running {
    std::vector<MemberPlacement> members;
    double end = 0;      // when it really ends
    double planned = 0;  // when backfill expects it to end (its time limit, or `end`)
  };
  enum class TryResult { kStarted, kNoFit, kHeld };
  // spare != nullptr: a head is blocked and holds a reservation (shadow_time_, *spare).
  TryResult TryStart(int j, double now, std::vector<Started>* out, long* spare);
  void ComputeShadow(int head, double now);
  // Run time backfill plans with for job j whose real run time here is `actual`.
  double PlannedRunTime(int j, double actual) const;

  Queueing queueing_;
  BackfillParams bf_;
  double now_ = 0;
  std::map<int, double> first_enqueued_;
  double next_bf_ = 0;                       // earliest time of the next backfill pass
  bool bf_dirty_ = true;                     // something changed since the last backfill pass
  std::vector<int> queue_;                   // waiting jobs, FIFO (by original arrival)
  std::set<int> fresh_;                      // enqueued since the last pass
  bool freed_ = true;                        // GPUs were freed since the last pass
  std::map<int, Running> running_;           // job -> placement
  std::set<std::pair<double, int>> by_end_;  // (planned end, job)
  // Backfill reservation for the blocked head.
  int shadow_head_ = -1;
  double shadow_time_ = kNever;
  long shadow_spare_gpus_ = 0;  // head members to spare at the shadow
};

// Helpers shared by the baselines.
// Picks `count` members of `gpus` free healthy GPUs each on `node`, skipping GPUs in `taken`.
void TakeMembersOnNode(const Cluster& c, int node, int gpus, int count,
                       std::vector<MemberPlacement>* out);
// Turns (node, members) pairs into member placements (each node's first free GPUs).
std::vector<MemberPlacement> Materialize(const Cluster& c,
                                         const std::vector<std::pair<int, int>>& node_members,
                                         int gpus);

// A GangPolicy on its own Cluster copy (every baseline).
class ClusterGangPolicy : public GangPolicy {
 public:
  const Cluster& cluster() const override { return cluster_; }

 protected:
  ClusterGangPolicy(const Cluster& c, PolicyContext ctx, Queueing q,
                    BackfillParams bf = BackfillParams())
      : GangPolicy(std::move(ctx), q, bf), cluster_(c) {}
  void Take(int job, const std::vector<MemberPlacement>& members) override;
  void Give(int job, const std::vector<MemberPlacement>& members) override;
  void SetCordoned(int node, bool cordoned) override { cluster_.SetNodeCordoned(node, cordoned); }

  Cluster cluster_;
};

}  // namespace topogang::sim
