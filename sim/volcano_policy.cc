// volcano-hypernode: Volcano's network-topology-aware scheduling over HyperNodes, written from
// `volcano:docs/design/Network Topology Aware Scheduling.md`, `volcano:pkg/scheduler/actions/
// allocate/allocate.go` (allocateForJob: hypernode gradients by tier) and `volcano:pkg/scheduler/
// plugins/network-topology-aware/network_topology_aware.go` (scores); research/anchors.md §1,
// §B1, §B2. HyperNode tier t is our level node_level - t (tier 1 = the switch above the nodes).
//  - required tier (hard mode, highestTierAllowed = that tier): tiers are tried in ascending
//    order; in the first tier with eligible hypernodes (free resources >= the job's), the one
//    with the highest binpack score (used + requested) / allocatable wins (ties: name order);
//  - preferred tier (soft mode): tasks placed one by one cluster-wide, each on the node whose
//    hypernode has the lowest common tier with the job's hypernode so far, then least requested
//    (the default nodeorder plugin), then name;
//  - no topology ("normal pods"): each task goes to the node whose hypernodes score highest on
//    binpack weighted fading^(tier-1) (fading 0.8), then least requested.
// Inside a chosen hypernode tasks are placed the same way as in soft mode. The job starts only
// when every task is placed (gang plugin / JobReady), else the statement is discarded.
// Queue: the allocate action walks jobs in queue order and skips a job that does not fit.
//
// `volcano-hypernode` picks the node inside a hypernode by least requested (most free GPUs), the
// default nodeorder plugin alone. `volcano-hypernode-best` sums the enabled plugins' node scores
// as the scheduler does (`pkg/scheduler/framework/session_plugins.go` NodeOrderFn), with the
// binpack plugin configured for GPUs as Volcano's GPU guides do (`binpack.resources:
// nvidia.com/gpu`, `pkg/scheduler/plugins/binpack/binpack.go`: score = weight x (used +
// requested) / allocatable). The GPU term decides, so a task goes to the fullest node that still
// fits it (ties: name order) and the tasks of a small gang land on one node.
#include <algorithm>
#include <cmath>

#include "sim/policies.h"

namespace topogang::sim {
namespace {

constexpr double kFading = 0.8;

class VolcanoPolicy : public ClusterGangPolicy {
 public:
  VolcanoPolicy(const Cluster& c, PolicyContext ctx, bool best)
      : ClusterGangPolicy(c, std::move(ctx), Queueing::kSkipBlocked),
        best_(best),
        taken_(c.num_domains(), 0) {}
  std::string name() const override {
    return best_ ? "volcano-hypernode-best" : "volcano-hypernode";
  }

 protected:
  std::optional<std::vector<MemberPlacement>> PlaceSku(int j, int sku) override {
    const GangSpec& s = job(j).gang;
    const Cluster& c = cluster_;
    const int g = s.gpus_per_member, n = s.members;
    sku_ = sku;
    if (c.MemberCapacity(0, sku, g) < n) return std::nullopt;
    std::optional<std::vector<MemberPlacement>> out;
    if (!s.required_tier.empty()) {
      const int req = std::max(1, c.LevelByName(s.required_tier));
      // A required node has no hypernode tier: the node itself is the only candidate level.
      const int first = req == c.node_level() ? req : c.node_level() - 1;
      for (int level = first; level >= req && !out; --level) {
        int best = -1;
        double best_score = -1;
        for (int d = c.LevelBegin(level); d < c.LevelEnd(level); ++d) {
          if (c.MemberCapacity(d, sku, g) < n) continue;
          const double total = c.domain(d).gpu_end - c.domain(d).gpu_begin;
          const double score = (total - c.FreeHealthy(d) + static_cast<double>(n) * g) / total;
          if (score > best_score) best = d, best_score = score;
        }
        if (best >= 0) out = PlaceTasks(best, g, n, /*normal=*/false);
      }
      return out;
    }
    return PlaceTasks(0, g, n, /*normal=*/s.preferred_tier.empty());
  }

 private:
  int Cap(int d, int g) const { return cluster_.MemberCapacity(d, sku_, g); }
  int FreeAt(int node) const {
    if (sku_ != kAnySku && cluster_.node(node).sku != sku_) return 0;
    return cluster_.NodeFreeHealthy(node) - taken_[cluster_.NodeDomain(node)];
  }

  // The node with room for one task in domain d that scores highest, or -1: most free GPUs
  // (least requested), or with the GPU binpack plugin (best) the fewest free GPUs that fit.
  int MostFree(int d, int g) const {
    int best = -1, best_free = -1;
    const Domain& dom = cluster_.domain(d);
    for (int node = dom.node_begin; node < dom.node_end; ++node) {
      int f = FreeAt(node);
      if (f < g) continue;
      if (best < 0 || (best_ ? f < best_free : f > best_free)) best = node, best_free = f;
    }
    return best;
  }

  // Room left in domain d (GPUs) after this placement's tentative tasks.
  double UsedFraction(int d) const {
    const double total = cluster_.domain(d).gpu_end - cluster_.domain(d).gpu_begin;
    return (total - cluster_.FreeHealthy(d) + taken_[d]) / total;
  }

  void TakeOne(int node, int g) {
    for (int d = cluster_.NodeDomain(node); d >= 0; d = cluster_.domain(d).parent) {
      if (taken_[d] == 0) touched_.push_back(d);
      taken_[d] += g;
    }
  }

  std::optional<std::vector<MemberPlacement>> PlaceTasks(int scope, int g, int n, bool normal) {
    const Cluster& c = cluster_;
    const int leaf_level = std::max(1, c.node_level() - 1);
    touched_.clear();
    std::vector<std::pair<int, int>> picks;
    int alloc_hn = -1;  // lowest common hypernode of the tasks placed so far
    for (int t = 0; t < n; ++t) {
      int node = -1;
      if (normal) {
        // Best leaf by fading-weighted binpack over its hypernode chain, then least requested.
        double best_score = -1;
        int best_leaf = -1;
        for (int d = c.LevelBegin(leaf_level); d < c.LevelEnd(leaf_level); ++d) {
          if (Cap(d, g) <= 0) continue;
          if (MostFree(d, g) < 0) continue;
          double score = 0, w = 1;
          for (int h = d; h > 0; h = c.domain(h).parent, w *= kFading) score += w * UsedFraction(h);
          if (score > best_score + 1e-12) best_score = score, best_leaf = d;
        }
        if (best_leaf >= 0) node = MostFree(best_leaf, g);
      } else {
        // Narrowest hypernode around the job first: every node inside alloc_hn has the same
        // (best) LCA tier; widen one tier at a time, never past the scope.
        const bool inside = alloc_hn >= 0 && c.domain(alloc_hn).level >= c.domain(scope).level;
        for (int d = inside ? alloc_hn : scope; d >= 0 && node < 0;
             d = d == scope ? -1 : c.domain(d).parent) {
          node = MostFree(d, g);
        }
      }
      if (node < 0) break;
      picks.emplace_back(node, 1);
      TakeOne(node, g);
      int leaf = c.AncestorAt(c.NodeDomain(node), leaf_level);
      if (alloc_hn < 0) {
        alloc_hn = leaf;
      } else {
        int a = alloc_hn, b = leaf;
        while (c.domain(a).level > c.domain(b).level) a = c.domain(a).parent;
        while (c.domain(b).level > c.domain(a).level) b = c.domain(b).parent;
        while (a != b) a = c.domain(a).parent, b = c.domain(b).parent;
        alloc_hn = a;
      }
    }
    for (int d : touched_) taken_[d] = 0;
    if (static_cast<int>(picks.size()) < n) return std::nullopt;
    return Materialize(c, picks, g);
  }

  bool best_;
  int sku_ = kAnySku;       // GPU model of the job being placed
  std::vector<int> taken_;  // GPUs tentatively taken per domain during one placement
  std::vector<int> touched_;
};

}  // namespace

std::unique_ptr<Policy> MakeVolcanoPolicy(const Cluster& c, PolicyContext ctx, bool best) {
  return std::make_unique<VolcanoPolicy>(c, std::move(ctx), best);
}

}  // namespace topogang::sim
