// kueue-tas: Kueue Topology Aware Scheduling, written from its public description
// (`kueue:keps/2724-topology-aware-scheduling/README.md`, `kueue:pkg/cache/scheduler/
// tas_flavor_snapshot.go`; summary and pseudo-code in research/anchors.md §2 and §B3):
//  - fillInCounts: pods that fit per node = floor(free / request), summed up the tree;
//  - required/preferred level: BestFit; no annotation (unconstrained): LeastFreeCapacity
//    (the "Mixed" profile, default since v0.15);
//  - findLevelWithFitDomains: the fullest-capacity domain at the level fits -> BestFit picks
//    the domain with the least capacity that still fits; else required fails and preferred
//    climbs one level toward the root; at the top, several domains are taken greedily;
//  - descending, the children of the chosen domains are sorted (BestFit: count desc, then
//    name) and taken greedily, the last one by BestFit, down to nodes.
// Kueue levels are our tiers plus the node (hostname) level. Queue: BestEffortFIFO, Kueue's
// default ClusterQueue queueingStrategy (a workload that does not fit is requeued and the next
// one is admitted), one ClusterQueue whose quota is the whole cluster; one ResourceFlavor per
// GPU model, tried in order (a gang never mixes models).
//
// `kueue-tas` takes the trace's tiers as they are. `kueue-tas-best` is Kueue as its users are
// told to run it (site/content/en/docs/concepts/topology_aware_scheduling.md, KEP 2724):
//  - every gang without a required tier asks for the most compact placement,
//    `podset-preferred-topology: kubernetes.io/hostname` (BestFit from the node level, climbing);
//  - the TopologyUngater gives consecutive ranks to pods of the same domain
//    (`pkg/controller/tas/topology_ungater.go`): members are ranked in topology order;
//  - TASFailedNodeReplacement (beta, on by default since v0.14): a running workload that loses
//    one node gets a replacement node for that node's pods without changing the rest of its
//    assignment, inside its required domain (or, preferred, as close as it gets); a second
//    failed node at the same time, or no room, evicts and requeues it (KEP "Node failures").
#include <algorithm>
#include <map>

#include "sim/policies.h"

namespace topogang::sim {
namespace {

class KueueTasPolicy : public ClusterGangPolicy {
 public:
  KueueTasPolicy(const Cluster& c, PolicyContext ctx, bool best)
      : ClusterGangPolicy(c, std::move(ctx), Queueing::kSkipBlocked), best_(best) {}
  std::string name() const override { return best_ ? "kueue-tas-best" : "kueue-tas"; }

 protected:
  using Counted = std::vector<std::pair<int, int>>;  // (domain, count)

  std::optional<std::vector<MemberPlacement>> PlaceSku(int j, int sku) override {
    const GangSpec& s = job(j).gang;
    const Cluster& c = cluster_;
    const int g = s.gpus_per_member, n = s.members;
    if (c.MemberCapacity(0, sku, g) < n) return std::nullopt;
    auto count = [&](int d) { return c.MemberCapacity(d, sku, g); };
    const int req = s.required_tier.empty() ? -1 : c.LevelByName(s.required_tier);
    int pref = s.preferred_tier.empty() ? -1 : c.LevelByName(s.preferred_tier);
    if (best_ && req < 0) pref = c.node_level();  // podset-preferred-topology: hostname
    const bool lfc = req < 0 && pref < 0;         // unconstrained -> LeastFreeCapacity
    int level = req >= 0 ? req : pref >= 0 ? pref : c.node_level();
    level = std::max(level, 1);

    Counted chosen;
    while (true) {
      Counted all;
      for (int d = c.LevelBegin(level); d < c.LevelEnd(level); ++d) {
        int k = count(d);
        if (k > 0) all.emplace_back(d, k);
      }
      // Sorted by id already; BestFit order = count desc (stable keeps names ascending).
      if (lfc) {
        // First domain in LeastFreeCapacity order (count asc) that fits.
        int best = -1;
        for (auto [d, k] : all) {
          if (k >= n && (best < 0 || k < count(best))) best = d;
        }
        if (best >= 0) {
          chosen = {{best, n}};
        } else {
          std::stable_sort(all.begin(), all.end(),
                           [](auto& a, auto& b) { return a.second < b.second; });
          chosen = Greedy(all, n);
        }
        break;
      }
      std::stable_sort(all.begin(), all.end(),
                       [](auto& a, auto& b) { return a.second > b.second; });
      if (!all.empty() && all.front().second >= n) {
        chosen = Greedy(all, n);  // the first fitting domain is BestFit'ed inside Greedy
        break;
      }
      if (req >= 0) return std::nullopt;  // required level has no domain that fits
      if (level > 1) {
        --level;
        continue;
      }
      chosen = Greedy(all, n);
      break;
    }
    if (chosen.empty()) return std::nullopt;
    // Descend: children of every chosen domain, sorted BestFit, taken greedily.
    while (c.domain(chosen.front().first).level < c.node_level()) {
      Counted kids;
      for (auto [d, k] : chosen) {
        const Domain& dom = c.domain(d);
        for (int ch = dom.child_begin; ch < dom.child_end; ++ch) {
          int kc = count(ch);
          if (kc > 0) kids.emplace_back(ch, kc);
        }
      }
      std::stable_sort(kids.begin(), kids.end(), [&](auto& a, auto& b) {
        return lfc ? a.second < b.second : a.second > b.second;
      });
      chosen = Greedy(kids, n);
      if (chosen.empty()) return std::nullopt;
    }
    std::vector<std::pair<int, int>> picks;
    for (auto [d, k] : chosen) picks.emplace_back(c.domain(d).node_begin, k);
    if (best_) std::sort(picks.begin(), picks.end());  // TopologyUngater: ranks by domain
    return Materialize(c, picks, g);
  }

  // TASFailedNodeReplacement: the members on the failed node move to the node that fits them
  // most tightly (BestFit) in the smallest domain around the surviving nodes, widening one
  // level at a time up to the required level (preferred/unconstrained: the whole cluster).
  bool Repair(int j, int node, double now, std::vector<MemberPlacement>* members) override {
    if (!best_) return false;
    auto last = replaced_at_.find(j);
    if (last != replaced_at_.end() && last->second == now) return false;  // a second failed node
    const GangSpec& s = job(j).gang;
    const Cluster& c = cluster_;
    const int g = s.gpus_per_member;
    int lost = 0, anchor = -1;
    for (const MemberPlacement& m : *members) {
      if (m.node == node) {
        ++lost;
      } else if (anchor < 0) {
        anchor = m.node;
      }
    }
    const int sku = c.node(node).sku;
    const int top = s.required_tier.empty() ? 0 : std::max(0, c.LevelByName(s.required_tier));
    int scope = -1;
    if (anchor >= 0) {
      int lca = c.NodeDomain(anchor);
      for (const MemberPlacement& m : *members) {
        if (m.node == node) continue;
        int d = c.NodeDomain(m.node);
        while (c.domain(lca).level > c.domain(d).level) lca = c.domain(lca).parent;
        while (c.domain(d).level > c.domain(lca).level) d = c.domain(d).parent;
        while (lca != d) lca = c.domain(lca).parent, d = c.domain(d).parent;
      }
      scope = lca;
    } else {
      scope = c.AncestorAt(c.NodeDomain(node), std::max(top, c.node_level() - 1));
    }
    for (int d = scope; d >= 0 && c.domain(d).level >= top; d = c.domain(d).parent) {
      const Domain& dom = c.domain(d);
      int pick = -1, pick_free = 0;
      for (int n = dom.node_begin; n < dom.node_end; ++n) {
        const int f = c.NodeFreeHealthy(n);
        if (c.node(n).sku != sku || f / g < lost) continue;
        if (pick < 0 || f < pick_free) pick = n, pick_free = f;
      }
      if (pick < 0) continue;
      std::vector<MemberPlacement> fresh;
      TakeMembersOnNode(c, pick, g, lost, &fresh);
      int k = 0;
      std::vector<int> old_gpus, new_gpus;
      for (MemberPlacement& m : *members) {
        if (m.node != node) continue;
        old_gpus.insert(old_gpus.end(), m.gpus.begin(), m.gpus.end());
        new_gpus.insert(new_gpus.end(), fresh[k].gpus.begin(), fresh[k].gpus.end());
        m = fresh[k++];
      }
      (void)cluster_.Release(old_gpus);
      (void)cluster_.Allocate(new_gpus);
      replaced_at_[j] = now;
      return true;
    }
    return false;
  }

  // Kueue's greedy over sorted domains: whole domains until the rest fits in one, then the
  // BestFit domain (least count that still holds the rest) among those not yet taken.
  static Counted Greedy(const Counted& sorted, int need) {
    Counted out;
    int rem = need;
    for (size_t i = 0; i < sorted.size() && rem > 0; ++i) {
      if (sorted[i].second >= rem) {
        size_t best = i;
        for (size_t k = i + 1; k < sorted.size(); ++k) {
          if (sorted[k].second >= rem && sorted[k].second < sorted[best].second) best = k;
        }
        out.emplace_back(sorted[best].first, rem);
        rem = 0;
        break;
      }
      out.push_back(sorted[i]);
      rem -= sorted[i].second;
    }
    if (rem > 0) return {};
    return out;
  }

  bool best_;
  std::map<int, double> replaced_at_;  // job -> time of its last node replacement
};

}  // namespace

std::unique_ptr<Policy> MakeKueueTasPolicy(const Cluster& c, PolicyContext ctx, bool best) {
  return std::make_unique<KueueTasPolicy>(c, std::move(ctx), best);
}

}  // namespace topogang::sim
