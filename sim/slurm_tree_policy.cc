// slurm-tree: Slurm's topology/tree plugin, written from `slurm:doc/html/topology.shtml` and
// `slurm:src/plugins/topology/tree/eval_nodes_tree.c` (_eval_nodes_topo,
// _topo_choose_best_switch, _topo_compare_switches, _topo_add_dist; hop distances from
// `tree/switch_record.c`), summary in research/anchors.md §4 and §B6. All nodes have one
// scheduling weight here, so:
//  1. the top switch is the highest-level switch with enough resources (the root);
//  2. leaf switches are chosen one at a time. A candidate beats the current best when it is
//     closer (sum of hop distances to the leaves already chosen) and holds the rest of the job,
//     or is equally close and compares better: when both hold the rest, the one with fewer free
//     resources (tightest fit); when one does, that one; when neither, their parents are
//     compared the same way; finally the one with more free resources;
//  3. the chosen leaf's free nodes are taken in node order until the job is satisfied.
// Resources are counted in members that fit (Slurm counts nodes and CPUs; a member here is a
// task with its GPUs). A required tier is our stand-in for `--switches=1@<forever>` at that
// tier: the top switch becomes the tightest switch of that tier that fits.
// Queue: FIFO by submit time with the backfill scheduler (sched/backfill, the default): the
// first job that cannot start gets a reservation, later jobs start if they do not delay it.
#include <algorithm>

#include "sim/policies.h"

namespace topogang::sim {
namespace {

class SlurmTreePolicy : public ClusterGangPolicy {
 public:
  SlurmTreePolicy(const Cluster& c, PolicyContext ctx)
      : ClusterGangPolicy(c, std::move(ctx), Queueing::kBackfill), taken_(c.num_domains(), 0) {}
  std::string name() const override { return "slurm-tree"; }

 protected:
  std::optional<std::vector<MemberPlacement>> Place(int j) override {
    const GangSpec& s = job(j).gang;
    const Cluster& c = cluster_;
    const int g = s.gpus_per_member, n = s.members;
    const int leaf_level = std::max(1, c.node_level() - 1);
    if (c.node_level() < 2) return std::nullopt;  // no switches configured
    int top = 0;
    if (!s.required_tier.empty()) {
      const int req = std::max(1, c.LevelByName(s.required_tier));
      top = -1;
      for (int d = c.LevelBegin(req); d < c.LevelEnd(req); ++d) {
        int k = c.MemberCapacity(d, kAnySku, g);
        if (k >= n && (top < 0 || k < c.MemberCapacity(top, kAnySku, g))) top = d;
      }
      if (top < 0) return std::nullopt;
    }
    if (c.MemberCapacity(top, kAnySku, g) < n) return std::nullopt;
    if (c.domain(top).level >= leaf_level) {
      // Required within one leaf switch (or one node): its free nodes in order.
      std::vector<std::pair<int, int>> picks;
      int rem = n;
      for (int node = c.domain(top).node_begin; node < c.domain(top).node_end && rem > 0; ++node) {
        int k = std::min(rem, c.NodeFreeHealthy(node) / g);
        if (k > 0) picks.emplace_back(node, k), rem -= k;
      }
      return Materialize(c, picks, g);
    }

    // Leaves under the top switch.
    std::vector<int> leaves;
    {
      int lo = c.domain(top).node_begin, hi = c.domain(top).node_end;
      for (int d = c.LevelBegin(leaf_level); d < c.LevelEnd(leaf_level); ++d) {
        if (c.domain(d).node_begin >= lo && c.domain(d).node_end <= hi) leaves.push_back(d);
      }
    }
    std::vector<long> dist(leaves.size(), 0);
    std::vector<char> used(leaves.size(), 0);
    touched_.clear();
    auto cnt = [&](int d) { return c.MemberCapacity(d, kAnySku, g) - taken_[d]; };
    std::vector<std::pair<int, int>> picks;
    int rem = n;
    while (rem > 0) {
      int best = -1;
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (used[i] || cnt(leaves[i]) <= 0) continue;
        if (best < 0) {
          best = static_cast<int>(i);
          continue;
        }
        bool i_fit = false;
        int tcs = Compare(leaves[i], leaves[best], rem, cnt, &i_fit);
        if ((dist[i] < dist[best] && i_fit) || (dist[i] == dist[best] && tcs > 0)) {
          best = static_cast<int>(i);
        }
      }
      if (best < 0) break;
      used[best] = 1;
      const int leaf = leaves[best];
      for (size_t i = 0; i < leaves.size(); ++i) dist[i] += Hops(leaf, leaves[i]);
      const Domain& ld = c.domain(leaf);
      for (int node = ld.node_begin; node < ld.node_end && rem > 0; ++node) {
        int k = std::min(rem, c.NodeFreeHealthy(node) / g);
        if (k <= 0) continue;
        picks.emplace_back(node, k);
        rem -= k;
        for (int d = c.NodeDomain(node); d >= 0; d = c.domain(d).parent) {
          if (taken_[d] == 0) touched_.push_back(d);
          taken_[d] += k;
        }
      }
    }
    for (int d : touched_) taken_[d] = 0;
    if (rem > 0) return std::nullopt;
    return Materialize(c, picks, g);
  }

 private:
  // Hop distance between two leaf switches: up to their lowest common switch and down again.
  int Hops(int a, int b) const {
    int h = 0;
    while (a != b) {
      a = cluster_.domain(a).parent;
      b = cluster_.domain(b).parent;
      h += 2;
    }
    return h;
  }
  // 1: a is the better fit, -1: b is, 0: no preference (_topo_compare_switches).
  template <typename Cnt>
  int Compare(int a, int b, int rem, const Cnt& cnt, bool* a_fit_out) const {
    while (true) {
      bool a_fit = cnt(a) >= rem, b_fit = cnt(b) >= rem;
      *a_fit_out = a_fit;
      if (a_fit && b_fit) {
        if (cnt(a) != cnt(b)) return cnt(a) < cnt(b) ? 1 : -1;
        break;
      }
      if (a_fit) return 1;
      if (b_fit) return -1;
      int pa = cluster_.domain(a).parent, pb = cluster_.domain(b).parent;
      if (pa >= 0 && pb >= 0 && pa != pb) {
        a = pa;
        b = pb;
        continue;
      }
      break;
    }
    if (cnt(a) != cnt(b)) return cnt(a) > cnt(b) ? 1 : -1;
    return 0;
  }

  std::vector<int> taken_;  // members taken per domain during one Place
  std::vector<int> touched_;
};

}  // namespace

std::unique_ptr<Policy> MakeSlurmTreePolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<SlurmTreePolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
