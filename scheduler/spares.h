// Hot spares: whole nodes kept idle in each domain of a tier (a leaf, an NVLink domain) so that a
// running gang that loses a node gets a replacement next to its peers at once, instead of
// waiting for free GPUs somewhere, or landing a tier further away.
//
// Spares take no ordinary work: while a SpareMask is alive they are hidden from the planner the
// same way the queue hides nodes kube-scheduler rejected (GangScheduler::MaskNodes), so no
// planning code needs to know about them. Replacements are proposed by ProposeSpareReplacement
// with the spares visible: a spare in the failed node's domain first, then ordinary free GPUs near
// the survivors (Planner::PlanNear with the spares hidden). A spare of another domain is never
// taken: it belongs to the gangs of its own domain.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/gang_scheduler.h"
#include "scheduler/node_mask.h"
#include "scheduler/placement.h"
#include "topology/cluster.h"

namespace topogang {

struct SpareOptions {
  // Spares are kept per domain of this tier; "" = the tier right above the nodes.
  std::string tier;
  // Spares per domain, chosen among its idle healthy nodes, last node first (deterministic).
  int per_domain = 0;
  // Nodes the operator marked spare (a node label); they count toward their domain's per_domain.
  std::vector<std::string> marked_nodes;
};

class SparePool {
 public:
  // InvalidArgument for an unknown tier or marked node, or a negative count.
  static absl::StatusOr<SparePool> Build(const Cluster& cluster, const SpareOptions& options);

  const std::vector<int>& nodes() const { return nodes_; }  // ascending
  bool IsSpare(int node) const;
  int level() const { return level_; }  // the tier spares are counted in
  // Spares in `domain` (any level) that could take one member of `gpus` GPUs now.
  int Available(const Cluster& cluster, int domain, int gpus) const;

 private:
  int level_ = 0;
  std::vector<int> nodes_;
};

// Hides the pool's spares from planning for its lifetime. Like MaskNodes, it must not outlive the
// caller's hold on the scheduler, and health changes must not be applied while it is alive.
class SpareMask {
 public:
  SpareMask(GangScheduler& sched, const SparePool& pool) : mask_(sched, pool.nodes()) {}

 private:
  NodeMask mask_;
};

// Where the `lost` members (ordinals) of running gang `gang` could go: for each, a spare in the
// pool-tier domain of the node it was on (and inside the gang's required tier), else ordinary free
// GPUs near the survivors. Same shape as ReplanEvent::replacement, for ApplyReplacement. Call with
// the spares unmasked; the scheduler is changed only for the duration of the call.
absl::StatusOr<std::vector<MemberPlacement>> ProposeSpareReplacement(GangScheduler& sched,
                                                                     const SparePool& pool,
                                                                     absl::string_view gang,
                                                                     const std::vector<int>& lost);

}  // namespace topogang
