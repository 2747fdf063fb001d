// The waiting line in front of the planner, shared by the daemon and the simulator.
//
// Gangs start in (priority, arrival) order, and a gang that cannot start does not block those
// behind it (backfill) — otherwise one 1,024-GPU job would idle the cluster. Backfill alone
// starves large gangs behind a stream of small ones, so once the oldest large gang has waited
// past `starvation_threshold`, the queue holds GPUs for it in its best domain as they free up (a
// kHeld record in the GangScheduler, invisible to the planner for everybody else) until it fits.
// This is Slurm's "reserve for the head, backfill the rest" idea applied to one domain, so the
// held GPUs also keep the big gang's locality. A held GPU idles, and with heavy-tailed run times
// (which the daemon does not know) a hold can wait hours, so by default holds start only for
// nearly-ready gangs and hold whole members only (QueueOptions; docs/placement-quality.md).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/gang.h"
#include "scheduler/gang_scheduler.h"

namespace topogang {

// How a starved gang's hold picks the nodes it claims in its domain.
enum class ClaimOrder {
  kMostFree,     // the nodes with the most free GPUs now
  kFewestGangs,  // the nodes with the fewest gangs still running on them (fewer jobs to wait
                 // for: with heavy-tailed run times the slowest of many ends late), then most free
  kSoonestFree,  // the nodes whose gangs all end soonest by their run-time estimates (a gang
                 // without one ends "never"), then as kFewestGangs
};

// The order gangs of one priority are tried in.
enum class QueueOrder {
  kArrival,        // first come, first served (backfill skips what does not fit)
  kSmallestFirst,  // fewest GPUs first, then arrival
};

struct QueueOptions {
  QueueOrder order = QueueOrder::kArrival;
  absl::Duration starvation_threshold = absl::Minutes(10);
  // Only gangs of at least this many GPUs get holds: smaller ones fit into a gap soon enough, and
  // holding for them cost more JCT than it saved (docs/placement-quality.md, "The queue").
  int hold_min_gpus = 256;
  // How many starved gangs may hold GPUs at once (the oldest first).
  int max_holds = 1;
  // Claim nodes for this many times the gang's members. More than 1 did not shorten waits in
  // the simulations (docs/placement-quality.md) and idles more GPUs.
  double claim_factor = 1.0;
  // Hold a claimed node's free GPUs only in whole members (a node with fewer free GPUs than one
  // member needs is left to the small jobs already there), so at most the gang's size is idle.
  bool whole_member_holds = true;
  ClaimOrder claim_order = ClaimOrder::kFewestGangs;
  // A starved gang starts holding only once it is nearly ready, so a hold idles few GPUs for
  // long: when the free GPUs of its hold domain (in whole members) reach hold_ready_fraction of
  // the gang, or when its shortfall there (GPUs it still needs) is at most
  // hold_max_shortfall_share of the cluster's GPUs (small gangs). A started hold keeps going.
  // hold_ready_fraction = 0 and hold_max_shortfall_share = 1: hold as soon as starved.
  // Holding from the start idled 6k-233k GPU-hours per trace (docs/placement-quality.md).
  double hold_ready_fraction = 0.65;
  double hold_max_shortfall_share = 0.01;
  // ... and in any case once the gang has waited this long: the guarantee against starvation
  // when backfill keeps its domain too busy to ever look nearly ready.
  absl::Duration hold_anyway_after = absl::Hours(48);
  // ... or (off by default) when backfill is what blocks it: the domain would hold the gang if
  // the gangs that started after it arrived were gone. Restores the bounded start under a
  // sustained stream of small jobs, but lost mean JCT on llm-failures-16k (118 m against 111 m).
  bool hold_when_backfill_blocks = false;
  // Give a hold up when the gang has not started this long after the hold began, and let it
  // hold again only after the same time again (its GPUs go back to backfill meanwhile).
  // Zero = never give up.
  absl::Duration hold_timeout = absl::ZeroDuration();
  // Until its hold starts, a starved gang targets the domain whose nodes should be free soonest
  // by the run-time estimates (Slurm's earliest-start reservation), then the one with the most
  // room now. Off: ahead over three seeds, not over ten (docs/placement-quality.md, variants).
  bool hold_domain_soonest = false;
  // Reservations in time (Slurm's backfill rule): a hold knows when its claim should be whole —
  // the latest estimated end of the gangs on its claimed nodes (GangSpec::runtime_estimate, else
  // the limit; never, if one has neither) — and a waiting gang whose enforced time limit
  // (GangSpec::runtime_limit) ends by then may run on the held GPUs meanwhile.
  bool backfill_into_holds = true;
  // ... and a hold also starts once its claim is estimated whole within this horizon
  // (zero: off), whatever the readiness rules above say.
  absl::Duration hold_horizon = absl::ZeroDuration();
  // Keep the claim clear: while the oldest starved gang that tried to hold (in order) cannot
  // start, the gangs behind it are planned first without the nodes its hold waits for (its
  // claim, also before the hold starts), and take that plan if it is as good as their shape
  // gets here (the best span bandwidth, no thin side). Nothing idles for it, unlike a hold: a
  // gang that fits only there still starts there. Off: over ten seeds of every cluster and load
  // no figure moved beyond its 95 % interval but one small p95 loss (docs/placement-quality.md,
  // "Keeping the claim clear").
  bool keep_claim_clear = false;
  // Locality patience: a gang that could start now only on a placement slower than its shape's
  // best on this cluster (the span bandwidth of the narrowest tier that can hold it: a sub-node
  // gang over several nodes, an NVL72 gang over several racks, a gang across islands) waits up
  // to this long for a better one, counted from the first time it could have started; then it
  // takes what there is. Zero: start on whatever fits at once.
  // Only gangs below hold_min_gpus wait: a larger one is kept from starving by a hold, which
  // already targets its best domain, and while it waited for locality that hold idled its GPUs.
  // Patience for them too lost goodput in 59 of 200 generated runs against 44 without, and the
  // longest 256+ GPU wait in 98 against 93 (docs/placement-quality.md, "Large gangs without
  // locality patience").
  absl::Duration locality_patience = absl::Minutes(30);
  // Thin-side patience: a gang below hold_min_gpus that could start now only on a placement
  // with a thin side (Placement::thin_level: e.g. 15 + 1 nodes across 2:1 uplinks, half the
  // speed of 8 + 8) waits up to this long, from the first time, for one without, while its GPUs
  // serve the gangs behind it; then it takes what fits. It waits only where the cluster could
  // hold it without a thin side once drained (GangQueue::ThinSideAvoidable, an estimate: the
  // limit also bounds its mistakes). Larger gangs take thin placements at once: they have holds,
  // and waiting cost them more than the slower run (docs/placement-quality.md, "Thin sides").
  // Zero: off.
  absl::Duration thin_side_patience = absl::Hours(6);
  // Large gangs in queue order: while the first starved gang of hold_min_gpus or more in the
  // pass cannot start, no gang of that size behind it (younger, or of lower priority) starts
  // either; smaller ones still backfill (unless large_in_order_overload_backlog stops them
  // too, below). Slurm's FIFO reservation keeps the longest large-gang
  // wait short by stopping everything younger; this stops only the large gangs, which are what
  // overtook the starved one (docs/placement-quality.md, "Large gangs in arrival order"). A
  // stopped gang neither holds nor preempts (it could not start on what either frees). A gang that
  // could not start even on a drained cluster (too few healthy GPUs of one SKU, or of whole
  // slices, in any domain it may use) stops nobody.
  // Off by default: on, the longest 256+ GPU wait drops from 1.46x to 1.23x the best baseline's
  // over the simulated matrix, but p95 JCT rises 19-30 % where those gangs alone overload the
  // cluster.
  bool large_gangs_in_order = false;
  // ... stopping only the gangs of at least this share of the starved gang's GPUs; smaller
  // large gangs still backfill. 0: every gang of hold_min_gpus or more is stopped. Where the
  // large gangs alone overload the cluster, the many mid-size gangs stopped behind an
  // 8,192-GPU one were what filled the JCT tail: 0.125 cut the p95 loss at hyperscale-100k
  // 2x-3x from 18-29 % to none beyond the interval, at the price of a longer 256+ wait at
  // 1x-1.25x there (docs/placement-quality.md, "Stopping only the gangs that compete").
  double large_in_order_min_share = 0;
  // ... but only while the large gangs overload the cluster. While the GPUs that the gangs of
  // hold_min_gpus or more still waiting after a pass ask for (those that could start on a
  // drained cluster) have not exceeded this share of the cluster's GPUs (all of them, healthy or
  // not), now or within large_in_order_overload_memory, a starved gang stops every younger gang
  // of hold_min_gpus or more, and below that every gang of at least min_share of its GPUs: close
  // to the order Slurm keeps, which gives the shortest large-gang waits where it is cheap. Once
  // the large gangs' backlog passed this share, stopping them all behind one starved gang is
  // what filled the JCT tail, so the share rule above applies until the memory has passed.
  // Needs large_in_order_min_share > 0 (the config refuses 0): with 0, every younger gang, down
  // to one GPU, would wait while the cluster is not overloaded.
  // 0: always the share rule. 0.7 with 48 h was the first setting to leave no simulated
  // (cluster, load) cell behind a baseline beyond its 95 % interval (docs/placement-quality.md,
  // "Large gangs in order while they do not overload, and ten fresh seeds"); 1.0 lost p95 JCT
  // at 2x. Over 30 seeds it is still behind in 4 of 20 cells ("Ten more fresh seeds").
  double large_in_order_overload_backlog = 0;
  absl::Duration large_in_order_overload_memory = absl::Hours(48);

  // Whether the overload switch above is in use (topogang_queue_large_overload reports it).
  bool LargeOverloadSwitch() const {
    return large_gangs_in_order && large_in_order_overload_backlog > 0;
  }
  // The one combination the switch refuses: with a share of 0, every younger gang down to one GPU
  // would wait while the cluster is calm. Empty when fine, else why, naming the share as the
  // caller spells it (a config key, a flag).
  static std::string OverloadBacklogProblem(double backlog, double min_share,
                                            absl::string_view share_name) {
    if (backlog <= 0 || min_share > 0) return "";
    return absl::StrCat("needs ", share_name,
                        " above 0 (e.g. 0.125): with 0, every younger gang, down to one GPU, "
                        "would wait behind a starved large gang while the cluster is not "
                        "overloaded");
  }
};

class GangQueue {
 public:
  explicit GangQueue(QueueOptions options = {}) : options_(options) {}

  struct Entry {
    GangSpec spec;
    absl::Time enqueued;
    int hold_domain = -1;    // domain the hold is in, once starved
    int hold_sku = kAnySku;  // the SKU of the nodes it holds there (PickHoldDomain)
    bool holding = false;    // a hold was started (hold_ready_fraction met) and not given up
    absl::Time hold_since = absl::InfinitePast();
    absl::Time hold_retry_at = absl::InfinitePast();  // after a timeout: no hold before this
    std::vector<int> claim;                           // the nodes the hold waits for, once starved
    // When the claim should be whole by the run-time estimates of the gangs on it
    // (InfiniteFuture: unknown).
    absl::Time ready_at = absl::InfiniteFuture();
    // First time it could have started, on a slower placement than its best (patience).
    absl::Time could_start = absl::InfiniteFuture();
    // Its required tier lapsed (GangSpec::required_tier_max_wait): `spec` now prefers that tier
    // instead, and it starts on whatever fits, without locality patience (it has waited).
    bool tier_relaxed = false;
    // First time it could have started only with a thin side (thin-side patience).
    absl::Time thin_since = absl::InfiniteFuture();
    // Why the queue itself kept it waiting on its last pass (locality patience, a thin side, a
    // starved large gang ahead: waits_behind); empty when it simply did not fit or waits behind
    // others. QueueAdmission answers with it only when the gang would fit now.
    std::string declined;
    // The starved large gang it was stopped behind on its last pass (large_gangs_in_order).
    std::string waits_behind;
    // It could not start even on a drained cluster, when last checked (large_gangs_in_order):
    // it stops nobody and is no part of the large gangs' backlog.
    bool never_starts = false;
  };

  // AlreadyExists if a gang of that name is waiting.
  absl::Status Enqueue(const GangSpec& gang, absl::Time now);
  // Drops a waiting gang and frees its hold, if any. False if it was not waiting.
  bool Remove(GangScheduler& sched, absl::string_view name);
  // Nodes a gang must not be planned on (the daemon: those kube-scheduler's own filters rejected
  // for its pods), or none.
  using NodeExclusion = std::function<std::vector<int>(const GangSpec&)>;
  // Starts (GangScheduler::Reserve) every waiting gang that fits now, in order with backfill,
  // and maintains holds for starved gangs. Returns the names started, in start order; their
  // records are kReserved in `sched`. Each gang is planned without its `exclude` nodes, and a
  // starved gang's hold is chosen and claimed without its `hold_exclude` nodes: those it may
  // never use. The two differ in the daemon, where a node kube-scheduler did not offer may only
  // be busy now (NodeResourcesFit refuses a node whose GPUs are all in use): planning must avoid
  // it, a hold must be free to wait for it.
  std::vector<std::string> Schedule(GangScheduler& sched, absl::Time now,
                                    const NodeExclusion& exclude = {},
                                    const NodeExclusion& hold_exclude = {});

  const std::vector<Entry>& waiting() const { return waiting_; }
  const QueueOptions& options() const { return options_; }
  // Whether the large gangs overload the cluster: the gangs of hold_min_gpus or more still
  // waiting after a Schedule pass asked for more than large_in_order_overload_backlog of its
  // GPUs, after the last pass or within large_in_order_overload_memory before `now` (always
  // true with the switch not in use, LargeOverloadSwitch; memory 0: the last pass only).
  bool LargeGangsOverload(absl::Time now) const;
  // The last pass that found them overloading it, for the next leader (kube/queue_journal.h),
  // rounded down to a hundredth of the memory and at least a minute: a lasting overload then
  // changes the journal, up to 900 KiB a write, every half hour at the 48-hour default instead of
  // at every pass, and the next leader's memory ends at most that much early. InfinitePast when
  // none was seen, or when the switch is off or has no memory past the last pass.
  absl::Time large_overload_seen() const;
  // Resumes an earlier leader's memory of that pass (ignored with the switch off). A time after
  // `now` (clocks skewed between replicas, an edited record) counts as `now`, so a bad record
  // keeps the share rule for one large_in_order_overload_memory at most.
  void SeedLargeOverload(absl::Time seen, absl::Time now);
  // The earliest time after `now` at which Schedule may start something without any other
  // change: a gang's locality or thin-side patience runs out, a large gang turns starved, or a
  // gang's required tier lapses.
  absl::Time NextDeadline(absl::Time now) const;
  bool Contains(absl::string_view name) const;
  // A waiting gang's patience started no later than these (an earlier leader's record).
  void SeedPatience(absl::string_view name, absl::Time could_start, absl::Time thin_since);
  // The waiting entry of that name, or null.
  const Entry* Find(absl::string_view name) const;
  size_t size() const { return waiting_.size(); }
  // Name of the kHeld record holding GPUs for `gang`.
  static std::string HoldName(absl::string_view gang);

 private:
  // Whether Planner::Plan would answer `gang` with a placement or ResourceExhausted (not
  // InvalidArgument: bad counts, unknown tiers, a slice tier wider than the required one).
  static bool Plannable(const GangScheduler& sched, const GangSpec& gang);
  // `sched` is built on another cluster model than the last pass saw (a new node set): every
  // waiting gang keeps its place, its waiting history and its right to hold, but the domain,
  // claim and estimate of its hold name the old model's nodes and are chosen again.
  void ForgetModel();
  // Frees the hold of `e` (if any) so the planner can see those GPUs.
  void DropHold(GangScheduler& sched, const Entry& e);
  // Reserves `gang` off the nodes of `claim` if a placement there is as good as its shape gets
  // on this cluster; otherwise reserves nothing (QueueOptions::keep_claim_clear).
  static absl::StatusOr<const GangRecord*> ReserveOffClaim(GangScheduler& sched,
                                                           const GangSpec& gang,
                                                           const std::vector<int>& claim,
                                                           absl::Time now);
  // Holds the free GPUs of e's claim (whole members unless configured otherwise).
  void HoldClaim(GangScheduler& sched, const Entry& e, absl::Time now);
  // Reserves `e` lending it the GPUs of the holds of `entries[lenders]` (whose claims are
  // estimated whole only after e would end); the holds are rebuilt after.
  absl::StatusOr<const GangRecord*> ReserveOnLentHolds(GangScheduler& sched, const Entry& e,
                                                       const std::vector<Entry>& entries,
                                                       const std::vector<size_t>& lenders,
                                                       absl::Time now);
  // Holds free healthy GPUs in e's target domain, up to what the gang needs. False when it
  // holds nothing: no domain could ever hold the gang, the domain is not ready enough yet
  // (hold_ready_fraction), or the hold timed out and is backing off.
  bool GrowHold(GangScheduler& sched, Entry& e, absl::Time now);
  // The domain a starved gang holds in, and in *hold_sku the SKU of the nodes it holds (kAnySku
  // when it may mix them); -1 if none could ever hold it.
  int PickHoldDomain(const GangScheduler& sched, const GangSpec& gang, absl::Time now,
                     int* hold_sku) const;
  // Whether `gang` fits some domain it may use once every gang there has ended, by capacity:
  // healthy GPUs of one SKU (unless it may mix them) on uncordoned nodes, none of its
  // `hold_exclude` nodes, in whole slices (QueueOptions::large_gangs_in_order).
  bool CouldStartWhenDrained(GangScheduler& sched, const GangSpec& gang,
                             const NodeExclusion& hold_exclude) const;
  // When `members` members of `g` GPUs should be free in the domain, by the run-time estimates
  // of the gangs on its nodes (InfiniteFuture when one of those it needs has none).
  absl::Time ReadyAt(const GangScheduler& sched, int domain, int sku, int g, int members,
                     absl::Time now) const;
  // Whether `nodes` would hold e's gang without the gangs that started after it arrived.
  bool BackfillBlocks(const GangScheduler& sched, const Entry& e,
                      const std::vector<int>& nodes) const;

  // Whether `gang`, placed now as `p` with a thin side, could be placed without one once the
  // cluster drained (healthy nodes only): whole inside one domain of the thin side's level, or
  // split there with at least the uplinks' oversubscription in nodes per part. Otherwise no
  // placement is better and waiting would never end.
  bool ThinSideAvoidable(const GangScheduler& sched, const GangSpec& gang,
                         const Placement& p) const;
  // Members of `g` GPUs the domain could hold once everything on its healthy nodes of `sku`
  // finished: whether holding GPUs there can ever work. Cached per health version.
  int PotentialMembers(const GangScheduler& sched, int domain, int sku, int g) const;
  // The nodes of `domain` that can host a member of `g` GPUs of `sku`, in claim order, with the
  // members free on them now. Cached while the scheduler's version and `now` stay the same.
  // Brings gangs_on_ and free_at_ up to date with the scheduler's state and `now`.
  void RefreshNodeTable(const GangScheduler& sched, absl::Time now) const;
  struct ClaimOrderNodes {
    std::vector<int> nodes;
    int free_members = 0;
  };
  const ClaimOrderNodes& NodesInClaimOrder(const GangScheduler& sched, int domain, int sku, int g,
                                           absl::Time now) const;

  QueueOptions options_;
  std::vector<Entry> waiting_;
  uint64_t model_id_ = 0;  // GangScheduler::model_id() of the last pass
  // The last pass after which the large gangs' backlog was above large_in_order_overload_backlog.
  absl::Time large_overload_seen_ = absl::InfinitePast();
  bool large_overload_last_pass_ = false;  // ... and whether it was after the last pass
  // Caches of what GrowHold derives from the scheduler's state. In an overloaded queue every
  // starved gang is looked at on every pass, mostly against an unchanged cluster; rebuilding
  // these per gang was most of the simulator's time (docs/placement-quality.md, "Speed").
  using ShapeKey = std::tuple<int, int, int>;  // (domain, sku, GPUs per member)
  mutable uint64_t potential_version_ = 0;
  mutable std::map<ShapeKey, int> potential_;
  mutable uint64_t table_version_ = 0;
  mutable absl::Time table_now_ = absl::InfinitePast();
  mutable std::vector<int> gangs_on_;        // per node: gangs running there
  mutable std::vector<absl::Time> free_at_;  // per node: when its last gang should end
  mutable std::map<ShapeKey, ClaimOrderNodes> claim_order_;
};

}  // namespace topogang
