#include "scheduler/spares.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "scheduler/replacement.h"

namespace topogang {

absl::StatusOr<SparePool> SparePool::Build(const Cluster& c, const SpareOptions& o) {
  SparePool pool;
  pool.level_ = o.tier.empty() ? std::max(0, c.node_level() - 1) : c.LevelByName(o.tier);
  if (pool.level_ < 0 || pool.level_ >= c.node_level()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spares: '", o.tier, "' is not a tier above the nodes"));
  }
  if (o.per_domain < 0) return absl::InvalidArgumentError("spares: per_domain < 0");
  std::set<int> spares;
  for (const std::string& name : o.marked_nodes) {
    int n = c.FindNode(name);
    if (n < 0) return absl::InvalidArgumentError(absl::StrCat("spares: no node '", name, "'"));
    spares.insert(n);
  }
  for (int d = c.LevelBegin(pool.level_); d < c.LevelEnd(pool.level_); ++d) {
    const Domain& dom = c.domain(d);
    int have = static_cast<int>(
        std::distance(spares.lower_bound(dom.node_begin), spares.lower_bound(dom.node_end)));
    for (int n = dom.node_end - 1; n >= dom.node_begin && have < o.per_domain; --n) {
      // Idle and healthy: every GPU free and usable.
      if (spares.count(n) || c.NodeFreeHealthy(n) != c.node(n).gpus) continue;
      spares.insert(n);
      ++have;
    }
  }
  pool.nodes_.assign(spares.begin(), spares.end());
  return pool;
}

bool SparePool::IsSpare(int node) const {
  return std::binary_search(nodes_.begin(), nodes_.end(), node);
}

int SparePool::Available(const Cluster& c, int domain, int gpus) const {
  const Domain& d = c.domain(domain);
  int count = 0;
  for (auto it = std::lower_bound(nodes_.begin(), nodes_.end(), d.node_begin);
       it != nodes_.end() && *it < d.node_end; ++it) {
    count += c.NodeFreeHealthy(*it) >= gpus;
  }
  return count;
}

absl::StatusOr<std::vector<MemberPlacement>> ProposeSpareReplacement(GangScheduler& sched,
                                                                     const SparePool& pool,
                                                                     absl::string_view gang,
                                                                     const std::vector<int>& lost) {
  return ProposeReplacement(sched, gang, lost, ReplacementOptions{&pool, {}});
}

}  // namespace topogang
