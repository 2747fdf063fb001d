#include "scheduler/rank_order.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace topogang {
namespace {

std::tuple<int, int> Key(const MemberPlacement& m) {
  if (m.node < 0) return {std::numeric_limits<int>::max(), 0};
  return {m.node, m.gpus.empty() ? 0 : *std::min_element(m.gpus.begin(), m.gpus.end())};
}

}  // namespace

std::vector<int> RankOrder(const Placement& p) {
  std::vector<int> order(p.members.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return Key(p.members[a]) < Key(p.members[b]); });
  return order;
}

void SortByRank(std::vector<MemberPlacement>* members) {
  std::stable_sort(
      members->begin(), members->end(),
      [](const MemberPlacement& a, const MemberPlacement& b) { return Key(a) < Key(b); });
}

}  // namespace topogang
