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
// one is admitted), one ClusterQueue whose quota is the whole cluster.
#include <algorithm>

#include "sim/policies.h"

namespace topogang::sim {
namespace {

class KueueTasPolicy : public ClusterGangPolicy {
 public:
  KueueTasPolicy(const Cluster& c, PolicyContext ctx)
      : ClusterGangPolicy(c, std::move(ctx), Queueing::kSkipBlocked) {}
  std::string name() const override { return "kueue-tas"; }

 protected:
  using Counted = std::vector<std::pair<int, int>>;  // (domain, count)

  std::optional<std::vector<MemberPlacement>> Place(int j) override {
    const GangSpec& s = job(j).gang;
    const Cluster& c = cluster_;
    const int g = s.gpus_per_member, n = s.members;
    if (c.MemberCapacity(0, kAnySku, g) < n) return std::nullopt;
    auto count = [&](int d) { return c.MemberCapacity(d, kAnySku, g); };
    const int req = s.required_tier.empty() ? -1 : c.LevelByName(s.required_tier);
    const int pref = s.preferred_tier.empty() ? -1 : c.LevelByName(s.preferred_tier);
    const bool lfc = req < 0 && pref < 0;  // unconstrained -> LeastFreeCapacity
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
    return Materialize(c, picks, g);
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
};

}  // namespace

std::unique_ptr<Policy> MakeKueueTasPolicy(const Cluster& c, PolicyContext ctx) {
  return std::make_unique<KueueTasPolicy>(c, std::move(ctx));
}

}  // namespace topogang::sim
