// The scheduling state shared by the CLI, the simulator and the daemon: one Cluster, the gangs
// holding GPUs on it (reserved = promised but not yet bound, running = bound), and the reactions
// to drains and faults. Pure: callers pass the time in.
#pragma once

#include <map>
#include <queue>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/gang.h"
#include "scheduler/placement.h"
#include "scheduler/planner.h"
#include "topology/cluster.h"

namespace topogang {

struct SchedulerOptions {
  // How long a reservation may wait for its members to bind before it is released.
  absl::Duration reservation_ttl = absl::Seconds(30);
  // Running gangs that lose members get a replacement proposal; apply it at once when true.
  bool auto_apply_replacements = false;
};

// kHeld: GPUs set aside for a starved gang by the queue (see queue_policy.h); never expires and is
// never re-planned, the queue rebuilds it.
enum class GangState { kReserved, kRunning, kHeld };
const char* GangStateName(GangState s);

struct GangRecord {
  GangSpec spec;
  Placement placement;
  GangState state = GangState::kReserved;
  absl::Time reserved_at;
  absl::Time expires_at;  // meaningful while reserved
  // Why a repair left this running gang slower than it ran (scheduler/repair_quality.h), "" if
  // none did. Only its controller can restart it; the mark lives as long as the record, unless a
  // later repair puts the gang back as fast as it ran before the first slower one.
  std::string slower_since_repair;
  // While marked: the placement it ran on before the first repair that slowed it, which later
  // repairs are judged against.
  Placement ran_before_slower;
};

// What a health change did to the gangs holding GPUs.
struct ReplanEvent {
  enum class Kind {
    kReplanned,            // a reservation moved off unhealthy GPUs
    kDropped,              // a reservation could not be re-planned and was released
    kReplacementProposed,  // a running gang lost members; here is where they could go
    kReplacementApplied,   // ... and the proposal was applied (auto_apply_replacements)
    kReplacementImpossible,
  };
  Kind kind;
  std::string gang;
  std::string detail;
  std::vector<int> lost_members;
  std::vector<MemberPlacement> replacement;  // for kReplacement*
};
const char* ReplanKindName(ReplanEvent::Kind k);

class GangScheduler {
 public:
  explicit GangScheduler(Cluster cluster, SchedulerOptions options = {});

  const Cluster& cluster() const { return cluster_; }
  const SchedulerOptions& options() const { return options_; }
  Planner planner() const { return Planner(cluster_); }

  // Plans without reserving.
  absl::StatusOr<Placement> DryRun(const GangSpec& gang) const { return planner().Plan(gang); }
  // Plans and reserves every GPU of the gang, or nothing. AlreadyExists if the name is taken.
  absl::StatusOr<const GangRecord*> Reserve(const GangSpec& gang, absl::Time now);
  // Reserves a given placement (e.g. rebuilt from what the API server says is bound).
  // require_healthy=false records GPUs already in use on nodes that have since gone bad.
  absl::Status Adopt(const GangSpec& gang, Placement placement, GangState state, absl::Time now,
                     bool require_healthy = true);
  // Grows a gang member by member (pods found bound one at a time after a restart). `member` ==
  // the placement's size appends a member; a member emptied by ReleaseMember is filled again.
  absl::Status AdoptMember(absl::string_view gang, int member, MemberPlacement placement,
                           bool require_healthy = true);
  // Frees one member's GPUs; the member stays as an empty slot (node -1) so the other members
  // keep their ordinals. The gang keeps running with the rest.
  absl::Status ReleaseMember(absl::string_view gang, int member);
  absl::Status Commit(absl::string_view gang);  // reserved -> running (no expiry)
  // Notes why a repair left the gang slower (GangRecord::slower_since_repair) and, unless it is
  // marked already, the placement it ran on before. NotFound if no such gang.
  absl::Status MarkSlowerSinceRepair(absl::string_view gang, std::string why,
                                     Placement ran_before = {});
  // A later repair put it back as fast as before: the mark and that placement go.
  absl::Status ClearSlowerSinceRepair(absl::string_view gang);
  // A reserved gang made progress (a member arrived): its TTL starts again from `now`, so a
  // reservation lives as long as its members keep coming, and dies reservation_ttl after the
  // last one did.
  absl::Status Touch(absl::string_view gang, absl::Time now);
  // Hides nodes from planning (kube-scheduler's own filters rejected them for the pod at hand:
  // selectors, affinity, taints, other resources). Not a health change: nothing is re-planned.
  // Returns the nodes it hid; UnmaskNodes must get them back before the lock is released.
  std::vector<int> MaskNodes(const std::vector<int>& nodes);
  void UnmaskNodes(const std::vector<int>& masked);
  absl::Status Release(absl::string_view gang);  // frees every GPU the gang holds
  // Releases reservations whose TTL has passed; returns their names.
  std::vector<std::string> ExpireReservations(absl::Time now);

  const GangRecord* Find(absl::string_view gang) const;
  // Reservations this scheduler released on its own (TTL, failed re-plan), counted: owners of
  // per-gang state reconcile only when it moved, instead of looking up every gang.
  uint64_t drops() const { return drops_; }
  const std::map<std::string, GangRecord, std::less<>>& gangs() const { return gangs_; }

  // Health changes. Reservations touching newly unhealthy GPUs are re-planned (or dropped);
  // running gangs get replacement proposals for the members they lost.
  std::vector<ReplanEvent> SetNodeCordoned(int node, bool cordoned, absl::Time now);
  std::vector<ReplanEvent> SetGpuFaulty(int gpu, bool faulty, absl::Time now);
  // Moves lost members of a running gang to `replacement` (all-or-nothing).
  absl::Status ApplyReplacement(absl::string_view gang, const std::vector<int>& lost_members,
                                const std::vector<MemberPlacement>& replacement);

  // Cluster counters exact, every held GPU marked used, no GPU held twice.
  absl::Status CheckInvariants() const;

  // Change counters for callers that cache what they derive from the state (the queue's hold
  // bookkeeping): version() moves on every change to a gang or a GPU, health_version() on every
  // health or mask change. Values are unique across instances (a process-wide counter), so a
  // cache kept across a scheduler swap never mistakes the new one for the old.
  uint64_t version() const { return version_; }
  uint64_t health_version() const { return health_version_; }
  // The cluster model this scheduler was built on, its node and domain numbering: set at
  // construction, kept by copies, unique across instances. A caller that keeps node or domain
  // indexes between calls (the queue's holds) checks it: after the daemon swaps in a model for a
  // new node set, the old indexes name other nodes, or none.
  uint64_t model_id() const { return model_id_; }

 private:
  static uint64_t NextVersion();
  void Changed() { version_ = NextVersion(); }
  void HealthChanged() { version_ = health_version_ = NextVersion(); }
  std::vector<ReplanEvent> ReactToHealthLoss(absl::Time now);

  Cluster cluster_;
  SchedulerOptions options_;
  std::map<std::string, GangRecord, std::less<>> gangs_;
  uint64_t drops_ = 0;
  uint64_t version_ = NextVersion();
  uint64_t health_version_ = version_;
  uint64_t model_id_ = version_;
  // Reservation deadlines, earliest first: expiry costs O(expired), not O(gangs), per sweep.
  using Deadline = std::pair<absl::Time, std::string>;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> expiry_;
};

}  // namespace topogang
