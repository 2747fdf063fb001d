#include "tests/kubesched/node_scores.h"

#include <algorithm>
#include <cmath>

namespace topogang::kubesched {
namespace {

int64_t LeastRequested(int64_t requested, int64_t capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  return (capacity - requested) * kMaxNodeScore / capacity;
}

}  // namespace

int64_t LeastAllocatedScore(const Pod& pod, const NodeState& node) {
  const Resources& alloc = node.node->allocatable;
  // NonZeroRequested on the node plus the pod's non-zero request; cpu and memory weigh 1 each.
  const int64_t cpu_req = node.nonzero_milli_cpu + pod.nonzero_milli_cpu;
  const int64_t mem_req = node.nonzero_memory + pod.nonzero_memory;
  int64_t score = 0, weights = 0;
  if (alloc.milli_cpu != 0) score += LeastRequested(cpu_req, alloc.milli_cpu), ++weights;
  if (alloc.memory != 0) score += LeastRequested(mem_req, alloc.memory), ++weights;
  return weights == 0 ? 0 : score / weights;
}

int64_t BalancedAllocationScore(const Pod& pod, const NodeState& node) {
  if (pod.requests.milli_cpu == 0 && pod.requests.memory == 0) return -1;
  const Resources& alloc = node.node->allocatable;
  std::vector<double> fractions;
  auto add = [&](int64_t requested, int64_t capacity) {
    if (capacity == 0) return;
    fractions.push_back(std::min(1.0, static_cast<double>(requested) / capacity));
  };
  add(node.requested.milli_cpu + pod.requests.milli_cpu, alloc.milli_cpu);
  add(node.requested.memory + pod.requests.memory, alloc.memory);
  double std_dev = 0;
  if (fractions.size() == 2) std_dev = std::abs((fractions[0] - fractions[1]) / 2);
  return static_cast<int64_t>((1 - std_dev) * kMaxNodeScore);
}

void NormalizeScores(std::vector<int64_t>* scores, bool reverse) {
  int64_t max = 0;
  for (int64_t s : *scores) max = std::max(max, s);
  if (max == 0) {
    if (reverse) std::fill(scores->begin(), scores->end(), kMaxNodeScore);
    return;
  }
  for (int64_t& s : *scores) {
    s = kMaxNodeScore * s / max;
    if (reverse) s = kMaxNodeScore - s;
  }
}

std::vector<int64_t> InTreeScores(const Pod& pod, const std::vector<const NodeState*>& nodes) {
  const size_t n = nodes.size();
  std::vector<int64_t> total(n, 0);
  // TaintToleration (weight 3): tolerations with PreferNoSchedule or no effect count.
  std::vector<Toleration> prefer;
  for (const Toleration& t : pod.tolerations) {
    if (t.effect.empty() || t.effect == "PreferNoSchedule") prefer.push_back(t);
  }
  std::vector<int64_t> taint(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (const Taint& t : nodes[i]->node->taints) {
      if (t.effect == "PreferNoSchedule" && !TolerationsTolerateTaint(prefer, t)) ++taint[i];
    }
  }
  NormalizeScores(&taint, /*reverse=*/true);
  // NodeAffinity (weight 2), skipped without preferred terms.
  std::vector<int64_t> affinity(n, 0);
  if (!pod.preferred_terms.empty()) {
    for (size_t i = 0; i < n; ++i) {
      for (const PreferredTerm& p : pod.preferred_terms) {
        if (p.weight != 0 && MatchesTerm(p.term, *nodes[i]->node)) affinity[i] += p.weight;
      }
    }
    NormalizeScores(&affinity, /*reverse=*/false);
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t balanced = BalancedAllocationScore(pod, *nodes[i]);
    total[i] = 3 * taint[i] + 2 * affinity[i] + LeastAllocatedScore(pod, *nodes[i]) +
               (balanced < 0 ? 0 : balanced);
  }
  return total;
}

}  // namespace topogang::kubesched
