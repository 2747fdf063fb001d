// The extender verbs without HTTP: filter, prioritize, bind (a per-gang barrier) and preempt,
// over the shared DaemonState. The HTTP server, tests and the load tool all drive this class.
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
#include "extender/admission.h"
#include "extender/binder.h"
#include "extender/daemon_state.h"
#include "extender/gang_labels.h"
#include "extender/pod_info.h"
#include "extender/wire_types.h"

namespace topogang {

struct ExtenderOptions {
  std::string gpu_resource = "nvidia.com/gpu";
  // How long held binds wait for the rest of the gang. Must stay below kube-scheduler's extender
  // httpTimeout (5s by default) or the scheduler gives up on the first members first.
  absl::Duration bind_window = absl::Seconds(4);
  // How often the worker checks barrier windows and reservation TTLs.
  absl::Duration tick = absl::Milliseconds(100);
  // Gang queue (backfill, holds for starved large gangs) used by the default admission.
  QueueOptions queue;
};

// Something worth telling users about, turned into a Kubernetes Event in cluster mode.
struct GangNotice {
  std::string type;    // "Normal" or "Warning"
  std::string reason;  // GangReserved, GangBound, GangExpired, GangBindFailed, GangUnschedulable
  std::string gang;
  std::string message;
  std::vector<ExtenderBindingArgs> pods;  // involved pods (name, namespace, uid)
};

using BindCallback = std::function<void(const ExtenderBindingResult&)>;

class ExtenderService {
 public:
  ExtenderService(DaemonState& state, Binder& binder, ExtenderOptions options,
                  std::unique_ptr<Admission> admission = nullptr);
  ~ExtenderService();  // fails every held bind, stops the worker
  ExtenderService(const ExtenderService&) = delete;
  ExtenderService& operator=(const ExtenderService&) = delete;

  // One verdict per offered node (the server's hot path: no per-node strings).
  FilterVerdicts FilterNodes(const ExtenderArgs& args);
  // The same, as a struct by node name (tests, tools).
  ExtenderFilterResult Filter(const ExtenderArgs& args);
  absl::StatusOr<std::vector<HostPriority>> Prioritize(const ExtenderArgs& args);
  // `done` is called exactly once, from this thread or the worker.
  void Bind(const ExtenderBindingArgs& args, BindCallback done);
  ExtenderPreemptionResult Preempt(const ExtenderPreemptionArgs& args);

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
  // Fails every held bind now (shutdown: the HTTP server must answer them before it closes).
  void FailHeldBinds(const std::string& why);

  struct Stats {
    int reserved_gangs = 0;
    int running_gangs = 0;
    int held_binds = 0;
  };
  Stats GetStats() const;

  const ExtenderOptions& options() const { return options_; }

 private:
  struct Member {
    std::string key;  // pod UID, or namespace/name when the UID is empty
    ExtenderBindingArgs pod;
    bool assigned = false;
    bool bound = false;
    bool gone = false;  // deleted or terminal (running gangs)
    BindCallback held;  // set while this member waits at the barrier
  };
  struct Entry {
    GangSpec spec;
    bool multi = false;  // a real gang (size > 1) as opposed to a gang of one
    // Regrouped from pods found bound (see ObservePod): slot i is core member i, members free
    // their GPUs one by one, and running=false means GPUs are reserved for missing members.
    bool adopted = false;
    bool running = false;
    bool binding = false;  // barrier opened; bindings in flight
    std::vector<Member> slots;
    std::optional<absl::Time> barrier_deadline;  // real time
    std::optional<absl::Time> fill_deadline;     // clock time: missing members' reservation TTL
  };
  using Job = std::function<void()>;

  void WorkerLoop();
  void Enqueue(Job job);
  void Notify(GangNotice n);
  // Drops ledger entries whose reservation the core no longer has (re-plan failed, TTL), failing
  // their held binds. Returns the callbacks to fail (called outside the lock).
  void SyncWithCoreLocked(std::vector<std::pair<BindCallback, std::string>>* fail);
  // The same for one gang (the hot path touches only the gang it serves).
  void SyncOneLocked(const std::string& id,
                     std::vector<std::pair<BindCallback, std::string>>* fail);
  void DropEntryLocked(const std::string& id, const std::string& why, bool release_core,
                       std::vector<std::pair<BindCallback, std::string>>* fail);
  std::vector<std::string> SlotNodesLocked(const std::string& id);
  void CompleteBarrier(const std::string& id);
  std::optional<std::string> AdoptBoundLocked(const PodInfo& pod);
  // Adopts `pod` into its multi-pod gang; nullopt when it joined, otherwise why it cannot (the
  // caller adopts it alone). Sets *error when the pod cannot be adopted at all.
  std::optional<std::string> AdoptIntoGangLocked(const PodInfo& pod, const GangMembership& gang,
                                                 std::optional<std::string>* error);
  // Takes GPUs for a bound pod on its node, displacing reservations there if it must.
  absl::StatusOr<MemberPlacement> TakeBoundGpusLocked(const PodInfo& pod);
  // Adopted gang: reserves GPUs next to the bound members for every missing member, or none.
  absl::Status ReserveMissingLocked(const std::string& id, Entry& e);
  // Adopted gang: gives back the reservations of members not bound (barrier or TTL expired, or
  // the cluster changed), keeping the bound ones running; drops the entry if none is left.
  void ShrinkToBoundLocked(const std::string& id, const std::string& why,
                           std::vector<std::pair<BindCallback, std::string>>* fail);
  void ExpireFillsLocked(std::vector<std::pair<BindCallback, std::string>>* fail);
  static std::string PodKey(absl::string_view uid, absl::string_view ns, absl::string_view name);

  DaemonState& state_;
  Binder& binder_;
  const ExtenderOptions options_;
  std::unique_ptr<Admission> admission_;

  mutable std::mutex mu_;
  std::map<std::string, Entry> gangs_;
  absl::flat_hash_map<std::string, std::pair<std::string, int>> by_pod_;  // key -> gang, slot
  std::set<std::string> pending_;   // ids of gangs reserved but not yet running
  std::set<std::string> barriers_;  // ids whose barrier window is open (may hold stale ids)
  std::set<std::string> fills_;     // adopted gangs with reserved missing members (may be stale)
  absl::flat_hash_set<std::string> passthrough_;  // pods seen in filter without GPUs or gang
  std::function<void(const GangNotice&)> notify_;

  std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace topogang
