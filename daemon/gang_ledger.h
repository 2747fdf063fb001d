// The gang ledger: which pod holds which slot of which gang's reservation, the bind barrier, and
// the reconciliation of that ledger with what the API server says (pods observed, deleted, the
// node set rebuilt, bound pods regrouped into their gangs). It speaks no wire format: the
// extender verbs (extender/) and the Kubernetes sync (kube/) are thin adapters over it.
//
// Implementation files, by concern: gang_ledger.cc (entries, worker, expiry), ledger_filter.cc,
// ledger_replan.cc, ledger_offered.cc, ledger_wake.cc (waking parked pods),
// ledger_bind.cc (the barrier), ledger_reconcile.cc (API server truth), ledger_regroup.cc.
//
// Gang flow. The first member to reach filter plans and reserves the whole gang (all-or-nothing,
// through an Admission policy). Each member pod then holds one slot of that reservation, keyed by
// pod UID, so a retried filter for the same pod gets the same node; filter passes only that node
// and prioritize gives it 10. Bind holds each member's reply (a callback, no thread blocked)
// until every member has reached bind, then binds them all through the Binder and commits the
// gang; if the window expires first every held bind fails and the reservation is released.
//
// Locking: mu_ (the ledger) is always taken before DaemonState's lock, never after.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "daemon/bind_pool.h"
#include "daemon/binder.h"
#include "daemon/daemon_state.h"
#include "daemon/eviction_queue.h"
#include "daemon/evictor.h"
#include "daemon/gang_ledger_options.h"
#include "k8s/gang_conventions.h"
#include "k8s/gang_labels.h"
#include "k8s/pod_info.h"
#include "scheduler/elastic.h"
#include "scheduler/preemption.h"
#include "scheduler/queue_admission.h"
#include "scheduler/queue_seniority.h"

namespace topogang {

// Asks kube-scheduler to try again the pods of `gang`, which it was told could not fit and now
// can: GPUs are reserved for it, on `node` among others (kube/: a Node annotation update, a
// cluster event that moves every pod an extender refused out of kube-scheduler's unschedulable
// pool). Called under the ledger's lock: must not block or call back into the ledger.
using WakeFn = std::function<void(const std::string& node, const std::string& gang)>;

// Something worth telling users about, turned into a Kubernetes Event in cluster mode.
struct GangNotice {
  std::string type;    // "Normal" or "Warning"
  std::string reason;  // GangReserved, GangBound, GangExpired, GangBindFailed, GangUnschedulable
  std::string gang;
  std::string message;
  std::vector<PodBinding> pods;  // involved pods (name, namespace, uid)
};

// The answer to a held bind: "" when the pod was bound, otherwise why not.
using BindCallback = std::function<void(const std::string& error)>;

// What filter decided for one pod, independent of how the verb writes it per node.
struct FilterDecision {
  enum class Kind {
    kPassAll,  // no GPUs and no gang: topogang has no opinion
    kSteer,    // only `node` passes; every other node fails with `reason`
    kFailAll,  // every node fails with `reason`
  };
  Kind kind = Kind::kPassAll;
  std::string node;
  std::string reason;
  bool unresolvable = false;  // preemption cannot help (kube-scheduler skips these nodes)
  std::string error;          // set: the verb answers with this Error too
};

class GangLedger {
 public:
  GangLedger(DaemonState& state, Binder& binder, GangLedgerOptions options,
             std::unique_ptr<Admission> admission = nullptr);
  ~GangLedger();  // fails every held bind, stops the worker
  GangLedger(const GangLedger&) = delete;
  GangLedger& operator=(const GangLedger&) = delete;

  // `offered` are the nodes that passed kube-scheduler's own filters for this pod.
  FilterDecision Filter(const PodInfo& pod, const std::vector<std::string>& offered);
  // The node this pod's slot is reserved on, "" when it holds none.
  std::string ReservedNode(const PodInfo& pod) const;
  // `done` is called exactly once, from this thread or the worker.
  void Bind(const PodBinding& binding, BindCallback done);
  // True when the pod (by UID) is a member of a gang of more than one pod: evicting it alone
  // would break the gang.
  bool InMultiPodGang(const std::string& uid) const;

  // --- Cluster sync (kube mode) ---------------------------------------------------------------
  // A pod as the API server sees it now. Bound GPU pods that topogang did not bind are adopted
  // (their GPUs are taken out of the model); terminal pods give their GPUs back.
  //
  // Regrouping. A bound pod whose labels name a multi-pod gang is adopted INTO that gang (one
  // ledger entry and one running core gang, grown member by member), so a restart or failover
  // keeps gangs whole for replacement proposals, preemption and the gRPC views. If the gang has
  // fewer bound pods than its size (a restart mid-bind), the first missing member to filter
  // reserves GPUs for all the missing ones next to the bound ones (all-or-nothing) and they bind
  // through the barrier, which then waits only for them. Members of a regrouped gang give their
  // GPUs back one by one as their pods go; the gang is released with its last pod. Pods that
  // disagree with their gang (size, GPUs, tier) are adopted alone, with an "adopt" warning.
  void ObservePod(const PodInfo& pod);
  void PodDeleted(const PodInfo& pod);
  // Replaces the model with `cluster` (a new node set): adopts every bound pod, then re-plans the
  // reservations of gangs still waiting. Bound pods never lose their GPUs.
  absl::Status Rebuild(Cluster cluster, const std::vector<PodInfo>& pods);

  void SetNotify(std::function<void(const GangNotice&)> notify);
  // Who wakes waiting pods (see WakeFn); none (the default, standalone mode): nobody. Set before
  // serving.
  void SetWaker(WakeFn wake);
  // kube-scheduler's preempt verb for `pod` (its candidate nodes: where evicting pods could make
  // room, by its own filters). For a member of a multi-pod gang, topogang preempts whole gangs
  // itself (or reports the preemption under way) and returns true: the caller answers
  // kube-scheduler with no victims, so it never evicts part of a gang for a gang member. False
  // for any other pod.
  bool PreemptForGang(const PodInfo& pod, const std::vector<std::string>& candidates);
  // Who evicts preempted gangs' pods; null (the default, standalone mode) turns preemption off.
  // Set before serving; must outlive the ledger.
  void SetEvictor(Evictor* evictor);
  // The group objects (PodGroups, JobSets, ...) gang conventions are sized from; null (the
  // default, standalone mode) makes conventions that need one an error. Set before serving.
  void SetGroupLookup(const GroupObjectLookup* lookup) { lookup_ = lookup; }
  // The pod's gang by every convention it carries (k8s/gang_conventions.h), tiers mapped through
  // the current model.
  GangResolution Resolve(const PodInfo& pod) const;
  // Leadership: a standby or a replica that lost its lease binds nothing (queued bindings fail
  // with `why`).
  void SetBindingAllowed(bool allowed, const std::string& why = "");
  // Fails every held bind now (shutdown: the HTTP server must answer them before it closes).
  void FailHeldBinds(const std::string& why);
  // The queue across restarts and failovers (kube/queue_journal.h keeps it): the arrival of
  // every gang waiting in the admission queue and the large gangs' last overload, and seeding an
  // earlier leader's record. Seed before serving (Admission::Seed).
  QueueMemory QueueSnapshot() const;
  void SeedQueue(const QueueMemory& memory);

  struct Stats {
    int reserved_gangs = 0;
    int running_gangs = 0;
    int held_binds = 0;
    int degraded_gangs =
        0;  // slower than they ran since a repair (GangRecord::slower_since_repair)
    // QueueOptions::large_in_order_overload_backlog in use: 1 while the large gangs overload
    // the cluster, 0 while they do not; -1 when the option is off.
    int large_overload = -1;
    Admission::Waiting queued;  // what waits in the admission queue (Admission::Queued)
  };
  Stats GetStats() const;

  const GangLedgerOptions& options() const { return options_; }

 private:
  struct Member {
    std::string key;  // pod UID, or namespace/name when the UID is empty
    PodBinding pod;
    bool assigned = false;
    bool bound = false;
    // The slot node this member's pod reached bind for (it passed kube-scheduler's filters and
    // its PreBind there). The barrier opens once every member arrived at its current slot node;
    // a re-plan that moves the slot voids the arrival.
    std::string arrived_node;
    bool in_flight = false;  // its binding is at the API server (the barrier's, or alone)
    BindCallback held;       // set while this member's bind request waits at the barrier
    absl::Time held_until;   // SteadyNow(): then the held request is answered (bind_window)
    // A running member's pod was lost (deleted, failed) from this node: the slot's replacement
    // takes a hot spare of that node's domain first. By name: the model may be rebuilt meanwhile.
    std::string lost_node;
  };
  struct Entry {
    // Which gang of this name: one whose pods were all deleted may come back under the same name
    // while its bindings are still answering; their callbacks must not touch the new one.
    uint64_t generation = next_generation.fetch_add(1);
    static inline std::atomic<uint64_t> next_generation{1};
    GangSpec spec;
    bool multi = false;  // a real gang (size > 1) as opposed to a gang of one
    // Regrouped from pods found bound (see ObservePod): slot i is core member i, members free
    // their GPUs one by one, and running=false means GPUs are reserved for missing members.
    bool adopted = false;
    bool running = false;
    bool binding = false;  // barrier opened; bindings in flight
    // kube-scheduler's GangScheduling plugin held the members at Permit: each binds on arrival.
    bool permit_barrier = false;
    std::vector<Member> slots;
    std::optional<absl::Time> fill_deadline;  // clock time: missing members' reservation TTL
    // Elastic gang (topogang.io/min-members): its maximum size; 0 for an ordinary gang. It was
    // reserved with its minimum (spec.members, which grows with it) in a domain chosen for
    // growth, and takes more members as pods come and GPUs free up there.
    int elastic_max = 0;
    // Every reserved node was among those kube-scheduler offered the member whose filter
    // reserved (or found) it. Only such a reservation, refused by another member, shows members
    // whose constraints disagree (counted against kMaxReplans). One planned by another gang's
    // queue pass, or on a node freed moments ago, was planned without this gang's offer: it is
    // planned again inside the offer as often as that happens.
    bool planned_in_offer = false;
  };
  using Job = std::function<void()>;

  void WorkerLoop();
  void Enqueue(Job job);
  void Notify(GangNotice n);
  // Drops ledger entries whose reservation the core no longer has (re-plan failed, TTL), failing
  // their held binds. Returns the callbacks to fail (called outside the lock).
  void SyncWithCoreLocked(std::vector<std::pair<BindCallback, std::string>>* fail);
  // The same for one gang (the hot path touches only the gang it serves).
  // `id` by value: callers pass keys of maps these erase (by_pod_'s gang names).
  void SyncOneLocked(std::string id, std::vector<std::pair<BindCallback, std::string>>* fail);
  void DropEntryLocked(std::string id, const std::string& why, bool release_core,
                       std::vector<std::pair<BindCallback, std::string>>* fail);
  std::vector<std::string> SlotNodesLocked(const std::string& id) const;
  // Every member arrived: commits gang `id` of `generation` (a re-plan can no longer move it) and
  // binds every arrived member, held or not, through the bind pool.
  void CompleteBarrier(const std::string& id, uint64_t generation);
  // Members whose held request is past its time, or whose slot moved, are answered.
  void AnswerHeldLocked(absl::Time now, std::vector<std::pair<BindCallback, std::string>>* fail);
  // True when every slot holds a member pod (filtered) or is bound.
  bool AllAssignedLocked(const Entry& e) const;
  // True when every slot is bound or arrived at its current node.
  bool AllArrivedLocked(const Entry& e, const std::vector<std::string>& nodes) const;
  // A binding found its pod gone (NotFound): its member gives its GPUs back, as its deletion
  // would (none may come: the pod may have been deleted before topogangd saw it).
  // `gone`: NotFound (a pinned binding that failed otherwise only gives its slot back).
  void PodGoneAtBind(const PodBinding& b, bool gone);
  // PodDeleted's work. `gone`: the pod no longer exists, and its uid is remembered for kWatchLag
  // (deleted_uids_): kube-scheduler's watch lags ours and may still filter it, and a
  // reservation made then would wait a TTL for a pod that never comes. Such a filter is an error
  // (DeletedPodMessage): kube-scheduler retries after its backoff, by when it has seen the
  // deletion and dropped the pod.
  void ForgetPod(const PodInfo& pod, bool gone);
  absl::flat_hash_map<std::string, absl::Time> deleted_uids_;  // uid -> SteadyNow()
  std::optional<std::string> DeletedPodMessage(const PodInfo& pod) const;
  // Runs a binding on the pool; `done` gets the result on a pool thread.
  void BindAsync(PodBinding b, std::function<void(absl::Status)> done);
  // A model rebuild reads the watch's cache, which shows a pod pending until the watch reports
  // its binding; the GPUs of pods being bound, or bound moments ago, must not look free in the
  // new model meanwhile. So a rebuild adopts them on their binding's node:
  // - bound_at_rebuild_: bindings at the API server at a rebuild (key -> node), settled by their
  //   answer (a failure gives the GPUs back), the watch, or the pod's deletion;
  // - recently_bound_: bindings that went through and the watch has not reported yet. Kept
  //   kWatchLag at most: a pod the watch never reports bound was deleted meanwhile (a relist
  //   sends no deletion), and must not keep GPUs.
  std::map<std::string, std::string> bound_at_rebuild_;
  struct RecentBinding {
    std::string node;
    absl::Time at;  // SteadyNow()
  };
  absl::flat_hash_map<std::string, RecentBinding> recently_bound_;
  static constexpr absl::Duration kWatchLag = absl::Minutes(1);
  // A binding of `key` to `node` answered `st`. True when the pod was adopted at a rebuild and the
  // binding failed: its GPUs go back (PodGoneAtBind, outside the lock; NotFound does that anyway).
  bool SettleBindingLocked(const std::string& key, const std::string& node, const absl::Status& st);
  std::optional<std::string> AdoptBoundLocked(const PodInfo& pod);
  // Adopts `pod` into its multi-pod gang; nullopt when it joined, otherwise why it cannot (the
  // caller adopts it alone). Sets *error when the pod cannot be adopted at all.
  std::optional<std::string> AdoptIntoGangLocked(const PodInfo& pod, const GangMembership& gang,
                                                 std::optional<std::string>* error);
  // Takes GPUs for a bound pod on its node, displacing reservations there if it must.
  absl::StatusOr<MemberPlacement> TakeBoundGpusLocked(const PodInfo& pod);
  // Adopted gang: reserves GPUs next to the bound members for every missing member, or none,
  // inside the nodes kube-scheduler `offered` the pod at hand (a node it refused, cordoned in
  // its view though not yet in ours, or outside the pod's selector, would refuse the pod for
  // good); a member lost from a node takes a hot spare of that node's domain first (a SpareTaken
  // notice per spare goes to `notices`, sent by the caller outside the lock).
  absl::Status ReserveMissingLocked(const std::string& id, Entry& e,
                                    const std::vector<std::string>& offered,
                                    std::vector<GangNotice>* notices);
  // Adopted gang: gives back the reservations of members not bound (barrier or TTL expired, or
  // the cluster changed), keeping the bound ones running; drops the entry if none is left.
  void ShrinkToBoundLocked(const std::string& id, const std::string& why,
                           std::vector<std::pair<BindCallback, std::string>>* fail);
  void ExpireFillsLocked(std::vector<std::pair<BindCallback, std::string>>* fail);
  // A pending gang (or pod of no gang) none of whose free slots kube-scheduler offered a member,
  // or whose member's own slot is no longer offered: drops it so the filter plans it again
  // inside that member's offered nodes. False when it must not (bound
  // members, binding, kMaxReplans counted re-plans within kReplanMemory, or a reservation not
  // planned inside an offer that this filter call (`replanned`) already planned again).
  bool DropForReplanLocked(const std::string& id, bool replanned,
                           std::vector<std::pair<BindCallback, std::string>>* fail);
  // Filter, once the gang's reservation was dropped to plan it again inside `offered`.
  FilterDecision Filter(const PodInfo& pod, const std::vector<std::string>& offered,
                        bool replanned);
  static constexpr int kMaxReplans = 3;
  // Counted re-plans older than this are forgotten: members that disagree re-plan within
  // seconds of each other, while a gang waiting for hours may meet a few cordons or taints.
  static constexpr absl::Duration kReplanMemory = absl::Minutes(1);
  static std::string PodKey(absl::string_view uid, absl::string_view ns, absl::string_view name);

  DaemonState& state_;
  Binder& binder_;
  const GangLedgerOptions options_;
  std::unique_ptr<Admission> admission_;

  mutable std::mutex mu_;
  std::map<std::string, Entry> gangs_;
  absl::flat_hash_map<std::string, std::pair<std::string, int>> by_pod_;  // key -> gang, slot
  std::set<std::string> pending_;   // ids of gangs reserved but not yet running
  std::set<std::string> barriers_;  // ids with held bind requests (may hold stale ids)
  std::set<std::string> fills_;     // adopted gangs with reserved missing members (may be stale)
  // Pods seen in filter without GPUs or gang -> their spec.schedulerName.
  absl::flat_hash_map<std::string, std::string> passthrough_;
  struct Replans {  // counted re-plans for unoffered slots; `last`: clock time of the last
    int count = 0;
    absl::Time last;
  };
  std::map<std::string, Replans> replans_;
  // gang -> model nodes kube-scheduler did not offer its pods at its last reservation attempt
  // (indexes into the current model: cleared when it is rebuilt).
  std::map<std::string, std::vector<int>> excluded_;
  // gang -> the nodes it may never use: refused although they had room for a member
  // (NodesRefusedWithRoom), and those it avoids while a gang of one waits. No hold for it, and no
  // queue pass for another gang, may use them. Both are dropped once nothing waits for the gang.
  std::map<std::string, std::vector<int>> hold_excluded_;
  // gang -> node -> when a filter first found that node refused with room. topogangd's watch can
  // trail kube-scheduler's: a pod already running on the node, seen by kube-scheduler and not yet
  // by us, kept it off the offer, and it only looked free here. When the watch then shows a pod
  // taking the node within kRecentlyFreed of that refusal, the refusal proves nothing and the
  // node leaves hold_excluded_ (NoteOccupiedLocked). Left in, the gang could never be planned
  // there once the node freed, and a younger gang offered it started first. Rebuilt at each
  // filter of the gang; cleared with hold_excluded_.
  std::map<std::string, absl::flat_hash_map<int, absl::Time>> refused_since_;
  // Gang `id`'s filter found `refused` (sorted) refused with room: keeps when each first was.
  void NoteRefusedWithRoomLocked(const std::string& id, const std::vector<int>& refused,
                                 absl::Time now);
  // A pod topogangd had not seen now holds GPUs on `node`: see refused_since_.
  void NoteOccupiedLocked(const std::string& node, absl::Time now);
  // Pods that wait for their gang (refused, or its reservation dropped), holding no slot: pod key
  // -> gang, and gang -> its pods (until the pod takes a slot: ForgetWaitingPodLocked). When the
  // last of them is deleted the gang leaves the queue at once, not after its TTL.
  std::map<std::string, std::string> waiting_pod_;
  std::map<std::string, std::set<std::string>> waiting_pods_;
  void NoteWaitingPodLocked(const std::string& gang, const std::string& key);
  void ForgetWaitingPodLocked(const std::string& key);
  // Wakes the pods of every gang the queue started since the last call: their pods were
  // refused, and wait for kube-scheduler to ask again. Not `asker` (the gang whose pod
  // `asker_pod` is filtering; "" for none) unless other pods of it were refused before.
  void WakeStartedLocked(const std::string& asker, const std::string& asker_pod = "");
  bool OthersWaitLocked(const std::string& gang, const std::string& pod) const;  // waiting_pods_
  WakeFn wake_;
  // Gangs whose missing members (replacements of a running gang's lost ones) were refused for
  // lack of room since the last wake. They are not in the queue, so nothing it starts wakes
  // them; GPUs kube-scheduler never saw taken (an expired reservation or fill, a hold let go)
  // free with no event either. So the worker's sweep compares the free GPUs per node with
  // `repair_baseline_` (what the latest refusal saw) and wakes them through a node that gained.
  // A gain kube-scheduler did see costs one redundant wake; a replacement that is then refused
  // again takes a new baseline. Erased when its gang's repair succeeds or its entry goes.
  std::set<std::string> refused_repairs_;
  std::vector<int> repair_baseline_;  // free GPUs per node
  void NoteRefusedRepairLocked(const std::string& id);
  void WakeRefusedRepairsLocked(const std::vector<std::string>& expired);
  void ForgetWaitingLocked(const std::string& gang);
  // Pending, ungated GPU pods (pod key) -> when the watch first saw them so: the queue's arrival
  // for the pod's gang is no later than that (Admission::Admit's waiting_since). Erased when the
  // pod is bound, gated or gone; cleared past kMaxHints (hints only, never state).
  absl::flat_hash_map<std::string, absl::Time> waiting_since_;
  static constexpr size_t kMaxHints = 1000000;
  absl::Time WaitingSinceLocked(const PodInfo& pod) const {
    auto it = waiting_since_.find(PodKey(pod.uid, pod.namespace_, pod.name));
    return it == waiting_since_.end() ? absl::InfiniteFuture() : it->second;
  }
  // Node name -> when the watch last saw a pod on it end: for kRecentlyFreed after, a node not
  // offered to a pod is not taken as one its gang may never use (kube-scheduler's watch may be
  // behind ours). Cleared past kMaxHints (hints only).
  // `offered_gpus`: the largest GPU request kube-scheduler has offered the node for since then;
  // its cache shows that much free there, so a member that size or smaller not offered it was
  // kept off by its own constraints (a selector, a taint), not by a stale cache.
  // `free_before`: at most the GPUs kube-scheduler saw free on the node before the deletion (its
  // GPUs less the pod's: GPUs reserved for gangs not yet bound are free to kube-scheduler); a pod
  // needing more that is offered the node shows kube-scheduler's cache has applied that deletion,
  // and so (one watch, in order) every deletion topogangd saw before it: cache_seen_. An upper
  // bound, so it never concludes early; it may conclude late (a pod that size may not come), and
  // then a gang not offered the node keeps it among those it may use for kRecentlyFreed.
  struct Freed {
    absl::Time at;
    int64_t offered_gpus = 0;
    int64_t free_before = 0;
  };
  absl::flat_hash_map<std::string, Freed> freed_at_;
  // The latest deletion kube-scheduler's cache is known to have applied (clock time). A node
  // freed no later than that and not offered was kept off by the pod's own constraints, not by a
  // stale cache (the churn test: a gang held to one pool planned for seconds on nodes freed in
  // the other by the same drain).
  absl::Time cache_seen_ = absl::InfinitePast();
  // The nodes gang `id`, not offered `not_offered` now, may never use: those refused with room
  // now (NodesRefusedWithRoom) but the `exempt` ones (sorted: freed moments ago, maybe not yet
  // free in kube-scheduler's cache), and those refused so at earlier filters, while still not
  // offered.
  std::vector<int> NodesItMayNeverUseLocked(const GangScheduler& s, const std::string& id,
                                            const std::vector<int>& not_offered,
                                            const std::vector<int>& exempt,
                                            int gpus_per_member) const;
  // Of `not_offered`, the nodes freed moments ago that kube-scheduler may not have seen free.
  std::vector<int> FreedUnseenLocked(const GangScheduler& s, const std::vector<int>& not_offered,
                                     int gpus_per_member, absl::Time now) const;
  // Notes, for the nodes freed moments ago, that kube-scheduler offered them to a pod of `gpus`.
  void NoteOfferedLocked(const std::vector<std::string>& offered, int64_t gpus, absl::Time now);
  static constexpr absl::Duration kRecentlyFreed = absl::Seconds(10);
  // Pod key -> when its filter was last refused for lack of room (wake_retry).
  absl::flat_hash_map<std::string, absl::Time> refused_at_;
  // Records a refusal of `key` now; true when the one before is at least wake_retry old.
  bool WokenLocked(const std::string& key, absl::Time now);
  // Planning exclusion for a queue pass run by `current`'s filter. `current` is planned inside
  // what its pod was offered just now. Any other waiting gang the pass may start is planned
  // without only the nodes it may never use (hold_excluded_): what it was not offered at its
  // last filter includes nodes that were merely full then, and a node that has freed since is
  // one it can take. Otherwise whichever gang asks first once a node frees takes it, whatever
  // the queue's order. Gangs behind `current` in the pass are also kept off asker_exempt_.
  GangQueue::NodeExclusion ExclusionLocked(const std::string& current) const;
  // While a gang planned again strictly inside its offer is admitted: its FreedUnseenLocked.
  std::vector<int> asker_exempt_;
  GangQueue::NodeExclusion HoldExclusionLocked() const;
  // The nodes `g` must not be planned on: those kube-scheduler did not offer it, and those
  // nominated for a preemptor of equal or higher priority (under mu_). With `hold_excluded_`
  // instead: the nodes GPUs held for it must not be on.
  std::vector<int> ExcludedFor(const GangSpec& g) const { return ExcludedFor(g, excluded_); }
  std::vector<int> ExcludedFor(const GangSpec& g,
                               const std::map<std::string, std::vector<int>>& by_gang) const;

  // A preemption under way for one gang (daemon/ledger_preempt.cc).
  struct Preemption {
    int priority = 0;
    int victim_priority = 0;
    std::vector<std::string> victims;
    std::vector<int> nodes;  // model nodes nominated for the preemptor (its planned placement)
    absl::Time deadline;     // clock time: the nomination lapses then
    int pods_left = 0;       // victim pods whose eviction has not been confirmed
    std::string failure;     // set when an eviction was refused (PDB); retried at retry_after
    absl::Time retry_after;
    PodBinding pod;  // the preemptor pod that started it (events go there)
  };
  std::map<std::string, Preemption> preempting_;  // by preemptor gang
  // A filter reason when a preemption for `spec` was started or is under way, nullopt when it
  // cannot help (no plan, or a victim topogang cannot evict).
  std::optional<std::string> PreemptLocked(const GangSpec& spec, const PodInfo& pod,
                                           const std::vector<std::string>& offered,
                                           std::vector<std::pair<BindCallback, std::string>>* fails,
                                           std::vector<GangNotice>* notices);
  void ExpireNominationsLocked(absl::Time now);
  void PreemptorPlacedLocked(const std::string& id);
  void EvictionsDone(const std::string& id, const absl::Status& st);

  // Elastic gangs (daemon/ledger_elastic.cc). Under the DaemonState lock: reserves `spec`'s
  // first `min_members` in a domain with room to grow toward spec.members, inside the nodes
  // kube-scheduler offered and the gang does not avoid.
  absl::Status StartElasticLocked(GangScheduler& s, const GangSpec& spec, int min_members,
                                  absl::Time now);
  // A pod of running elastic gang `id` with no free slot: one more member in the start domain,
  // among the offered nodes. Its slot (it binds alone), or the filter's answer.
  absl::StatusOr<int> GrowElasticLocked(const std::string& id, Entry& e, const PodInfo& pod,
                                        const std::string& key,
                                        const std::vector<std::string>& offered,
                                        std::vector<GangNotice>* notices);
  ElasticGangs elastic_;

  // Per-job exclusion (daemon/ledger_exclusion.cc): the nodes `gang` avoids by name (its pod's
  // avoid-nodes, where its members failed within failed_node_memory, slow nodes if large).
  absl::StatusOr<std::vector<std::string>> AvoidedNodesLocked(const GangSpec& gang,
                                                              const PodInfo& pod);
  // Admit, and a reservation the queue made that touches `avoid` (sorted) is planned again.
  absl::StatusOr<const GangRecord*> AdmitAvoidingLocked(GangScheduler& s, const GangSpec& spec,
                                                        const std::vector<std::string>& avoid,
                                                        absl::Time now, absl::Time waiting_since);
  void RecordFailureLocked(const std::string& gang, const std::string& node);
  static std::vector<int> NodeIndexes(const Cluster& c, const std::vector<std::string>& names);
  static constexpr size_t kMaxAvoidedNodes = 1000;
  std::map<std::string, std::map<std::string, absl::Time>> failed_on_;  // gang -> node -> when
  std::function<void(const GangNotice&)> notify_;
  std::atomic<const GroupObjectLookup*> lookup_{nullptr};
  // Pod key -> the last membership error posted as a Warning event (once per change).
  std::map<std::string, std::string> warned_;
  void WarnMembership(const PodInfo& pod, const std::string& message);

  std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread worker_;
  std::unique_ptr<EvictionQueue> evictions_;  // destroyed before the maps its callbacks touch
  // Last: destroyed first, answering queued bindings while the ledger is still whole.
  std::unique_ptr<BindPool> pool_;
};

}  // namespace topogang
