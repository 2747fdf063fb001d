#include "scheduler/placement.h"

#include <algorithm>
#include <utility>

namespace topogang {

std::vector<int> Placement::Gpus() const {
  std::vector<int> out;
  for (const MemberPlacement& m : members) out.insert(out.end(), m.gpus.begin(), m.gpus.end());
  return out;
}

std::vector<int> Placement::Nodes() const {
  std::vector<int> out;
  for (const MemberPlacement& m : members) {
    if (m.node >= 0) out.push_back(m.node);  // node -1: a member released on its own
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void SummarizePlacement(const Cluster& c, Placement* p) {
  std::vector<int> nodes = p->Nodes();
  p->domains_per_level.assign(c.num_levels(), 0);
  if (nodes.empty()) return;
  for (int l = 0; l < c.num_levels(); ++l) {
    int count = 0, last = -1;
    for (int n : nodes) {  // nodes ascending => ancestors ascending
      int d = c.AncestorAt(c.NodeDomain(n), l);
      if (d != last) ++count, last = d;
    }
    p->domains_per_level[l] = count;
  }
  int level = 0;
  while (level + 1 < c.num_levels() && p->domains_per_level[level + 1] == 1) ++level;
  p->level = level;
  p->domain = c.AncestorAt(c.NodeDomain(nodes.front()), level);
  p->bandwidth_gbps = c.SpanBandwidthGbps(level);
  // Thin sides, lowest level first. The ring's NIC-bound speed is set by the node with the
  // fewest of the gang's GPUs; a domain whose uplink share (its gang GPUs / oversubscription)
  // is below that node's GPUs slows the whole ring.
  p->thin_level = -1;
  p->thin_nodes = 0;
  bool oversubscribed = false;  // most spans cross none: skip the per-node work
  for (int l = level + 1; l < c.node_level(); ++l)
    oversubscribed |= c.UplinkOversubscription(l) > 1;
  if (!oversubscribed) return;
  std::vector<std::pair<int, int>> per_node;  // (node, gang GPUs on it), nodes ascending
  for (const MemberPlacement& m : p->members) {
    if (m.node >= 0) per_node.emplace_back(m.node, static_cast<int>(m.gpus.size()));
  }
  std::sort(per_node.begin(), per_node.end());
  size_t merged = 0;
  for (size_t i = 0; i < per_node.size(); ++i) {
    if (merged > 0 && per_node[merged - 1].first == per_node[i].first) {
      per_node[merged - 1].second += per_node[i].second;
    } else {
      per_node[merged++] = per_node[i];
    }
  }
  per_node.resize(merged);
  int fewest = 0;
  for (const auto& [n, g] : per_node) fewest = fewest == 0 ? g : std::min(fewest, g);
  for (int l = c.node_level() - 1; l > level; --l) {
    const double os = c.UplinkOversubscription(l);
    if (os <= 1) continue;
    for (size_t i = 0; i < per_node.size();) {
      const int d = c.AncestorAt(c.NodeDomain(per_node[i].first), l);
      size_t j = i;
      int gpus = 0;
      for (; j < per_node.size() && c.AncestorAt(c.NodeDomain(per_node[j].first), l) == d; ++j) {
        gpus += per_node[j].second;
      }
      // Below the span every domain holds only part of the gang, so its ring leaves d.
      const int count = static_cast<int>(j - i);
      if (gpus < os * fewest && (p->thin_level < 0 || count < p->thin_nodes)) {
        p->thin_level = l;
        p->thin_nodes = count;
      }
      i = j;
    }
    if (p->thin_level >= 0) return;
  }
}

}  // namespace topogang
