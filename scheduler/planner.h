// Places a whole gang on the cluster as it is now, without changing it.
//
// Policy (deterministic for the same input):
//  1. The lowest tier that fits: try one node, then one NVLink domain/leaf/..., up to the
//     required tier (or the whole cluster).
//  2. Among the domains of that tier that fit, best fit: the fewest free GPUs left over, then the
//     fewest left over in its parent, and so on up. Small gangs thus fill domains already in use
//     and keep whole leaves and NVLink domains free for large gangs.
//  3. Inside the chosen domain, span as few child domains as possible: take the children with the
//     most room until the rest fits in one child, then the tightest child that holds the rest.
//  4. A multi-node gang of members smaller than a node that step 2 put partly on half-used
//     nodes is re-planned on whole nodes within the same tier, if they fit (WholeNodes below).
// Slices (groups of k members sharing a tier) are placed as units at and above the slice tier.
//
// preferred_tier is honoured by step 1: tiers are tried narrowest first, so a gang lands within
// one domain of its preferred tier (or a narrower one) whenever any such domain has room, and
// otherwise within the lowest tier that fits, never wider; preferred_met says which. Replacements
// (PlanNear) widen from the survivors' domain one level at a time, so they too stay inside the
// preferred tier while it has room. tests/scheduler/planner_preferred_tier_test.cc pins this.
#pragma once

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/gang.h"
#include "scheduler/placement.h"
#include "topology/cluster.h"

namespace topogang {

class Planner {
 public:
  explicit Planner(const Cluster& cluster) : c_(cluster) {}

  // A placement, or: InvalidArgument for a malformed gang or unknown tier/SKU; ResourceExhausted
  // whose message names the tightest constraint ("needs 64 GPUs within one leaf; the best leaf
  // has room for 40").
  absl::StatusOr<Placement> Plan(const GangSpec& gang) const;

  // Places `count` more members of `gang` as close as possible to `anchor_nodes` (its surviving
  // members): the smallest domain holding survivors first, widening one level at a time, never
  // past the gang's required tier. Used to replace members lost to node or GPU failures.
  absl::StatusOr<std::vector<MemberPlacement>> PlanNear(const GangSpec& gang, int count,
                                                        std::span<const int> anchor_nodes) const;

 private:
  struct Request;
  absl::StatusOr<Placement> PlanForSku(const GangSpec& gang, int sku, int top_level,
                                       int pref_level) const;
  bool Search(const Request& r, int scope, int top_level, std::vector<MemberPlacement>* out,
              int* chosen) const;
  int SearchOneNode(const Request& r, int scope, long need_gpus) const;
  // A multi-node gang of members smaller than a node runs its ring at the pace of the node with
  // the fewest of its GPUs (that node's NICs carry the ring's inter-node traffic alone:
  // docs/network-model.md, "4 x 2 GPUs"), so one node holding a single 4-GPU member halves the
  // whole gang's all-reduce. When the plan left such a node, re-plan on whole nodes only (each
  // node a full node's worth of members) within the same tier, and keep that if it fits.
  void WholeNodes(const Request& r, std::vector<MemberPlacement>* members, int* chosen) const;
  int UnitCap(const Request& r, int domain) const;
  bool Better(const Request& r, int a, int b) const;
  void Assign(const Request& r, int domain, int units, bool slice_units,
              std::vector<MemberPlacement>* out) const;
  std::string NoFitReason(const GangSpec& gang, int sku, int top_level) const;

  const Cluster& c_;
};

}  // namespace topogang
