#include "topology/cluster.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace topogang {

absl::StatusOr<Cluster> Cluster::Build(const ClusterSpec& spec, const TopologyConfig& topology,
                                       std::vector<std::string>* warnings) {
  if (absl::Status s = ValidateClusterSpec(spec); !s.ok()) return s;
  auto warn = [&](std::string w) {
    if (warnings) warnings->push_back(std::move(w));
  };

  Cluster c;
  c.name_ = spec.name;
  c.topology_ = topology;

  // A tier no node carries (say, no core label on a one-core fabric) is dropped instead of
  // isolating every node.
  std::vector<const TierSpec*> tiers;
  for (const TierSpec& t : topology.tiers) {
    bool any = std::any_of(spec.nodes.begin(), spec.nodes.end(), [&](const NodeSpec& n) {
      return n.gpus > 0 && n.labels.count(t.label);
    });
    if (any) {
      tiers.push_back(&t);
    } else if (!t.optional) {
      warn(absl::StrCat("tier '", t.name, "': no node has label ", t.label, "; tier ignored"));
    }
  }
  const int num_tiers = static_cast<int>(tiers.size());
  c.topology_.tiers.clear();
  for (const TierSpec* t : tiers) c.topology_.tiers.push_back(*t);

  // Sort key per node: one component per tier. A present label sorts as "v:<value>"; a missing one
  // as "~<node name>" (after every present value), which makes the node its own domain at that
  // tier and below: never silently merged with other nodes.
  struct Entry {
    const NodeSpec* spec;
    std::vector<std::string> key;
  };
  std::vector<Entry> entries;
  entries.reserve(spec.nodes.size());
  for (const NodeSpec& n : spec.nodes) {
    if (n.gpus == 0) continue;
    Entry e{&n, {}};
    bool isolated = false;
    for (const TierSpec* t : tiers) {
      auto it = n.labels.find(t->label);
      if (isolated || it == n.labels.end()) {
        if (!isolated && !t->optional) {
          warn(absl::StrCat("node ", n.name, ": no label ", t->label, " (tier '", t->name,
                            "'); placed in its own unknown ", t->name,
                            " domain, never grouped with other nodes"));
        }
        isolated = true;
        e.key.push_back(absl::StrCat("~", n.name));
      } else {
        e.key.push_back(absl::StrCat("v:", it->second));
      }
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.key != b.key) return a.key < b.key;
    return a.spec->name < b.spec->name;
  });

  // Levels and their bandwidths.
  c.level_names_.push_back("cluster");
  c.level_aliases_.emplace_back();
  std::vector<double> eff;
  eff.push_back(topology.cluster_bandwidth_gbps / topology.cluster_oversubscription);
  c.uplink_oversubscription_ = {1.0, topology.cluster_oversubscription};
  for (const TierSpec* t : tiers) {
    c.level_names_.push_back(t->name);
    c.level_aliases_.push_back(t->aliases);
    eff.push_back(t->bandwidth_gbps / t->oversubscription);
    // The uplinks of the level below t (below the last tier: the nodes' NICs).
    c.uplink_oversubscription_.push_back(t->oversubscription);
  }
  c.level_names_.push_back("node");
  c.level_aliases_.emplace_back();
  eff.push_back(topology.node_bandwidth_gbps);
  c.span_bandwidth_.assign(eff.size(), 0);
  double running = eff.back();
  for (int l = static_cast<int>(eff.size()) - 1; l >= 0; --l) {
    running = std::min(running, eff[l]);
    c.span_bandwidth_[l] = running;
  }

  // Nodes, SKUs and GPU ranges.
  absl::flat_hash_map<std::string, int> sku_index;
  int gpu = 0;
  for (const Entry& e : entries) {
    NodeInfo info;
    info.name = e.spec->name;
    info.gpu_begin = gpu;
    info.gpus = e.spec->gpus;
    std::string sku = e.spec->sku.empty() ? "unknown" : e.spec->sku;
    auto [it, inserted] = sku_index.emplace(sku, static_cast<int>(c.sku_names_.size()));
    if (inserted) c.sku_names_.push_back(sku);
    info.sku = it->second;
    c.max_gpus_per_node_ = std::max(c.max_gpus_per_node_, info.gpus);
    c.node_index_[info.name] = static_cast<int>(c.nodes_.size());
    for (int g = 0; g < info.gpus; ++g) c.gpu_node_.push_back(static_cast<int>(c.nodes_.size()));
    gpu += info.gpus;
    c.nodes_.push_back(std::move(info));
  }
  if (c.sku_names_.empty()) c.sku_names_.push_back("unknown");
  const int num_nodes = c.num_nodes();

  // Domains, level by level. A new domain starts wherever the key prefix changes.
  const int levels = num_tiers + 2;
  c.level_begin_.assign(levels + 1, 0);
  c.domains_.push_back(Domain{0, -1, 0, 0, 0, num_nodes, 0, gpu, "cluster", false});
  std::vector<int> node_domain_prev(num_nodes, 0);  // node's domain at the previous level
  for (int l = 1; l < levels; ++l) {
    c.level_begin_[l] = c.num_domains();
    std::vector<int> node_domain(num_nodes);
    for (int n = 0; n < num_nodes; ++n) {
      bool fresh = n == 0 || node_domain_prev[n] != node_domain_prev[n - 1];
      if (!fresh && l <= num_tiers) fresh = entries[n].key[l - 1] != entries[n - 1].key[l - 1];
      if (!fresh && l == levels - 1) fresh = true;  // node level: one domain per node
      if (fresh) {
        Domain d;
        d.level = l;
        d.parent = node_domain_prev[n];
        d.node_begin = n;
        d.gpu_begin = c.nodes_[n].gpu_begin;
        if (l == levels - 1) {
          d.name = c.nodes_[n].name;
        } else {
          const std::string& k = entries[n].key[l - 1];
          d.unknown = k[0] == '~';
          bool optional_missing = d.unknown && tiers[l - 1]->optional;
          d.name = optional_missing ? c.nodes_[n].name
                   : d.unknown      ? absl::StrCat("unknown(", c.nodes_[n].name, ")")
                                    : k.substr(2);
        }
        c.domains_.push_back(std::move(d));
      }
      Domain& cur = c.domains_.back();
      cur.node_end = n + 1;
      cur.gpu_end = c.nodes_[n].gpu_begin + c.nodes_[n].gpus;
      node_domain[n] = c.num_domains() - 1;
    }
    node_domain_prev = std::move(node_domain);
  }
  c.level_begin_[levels] = c.num_domains();
  // Children ranges (children of a domain are contiguous at the next level).
  for (auto& d : c.domains_) d.child_begin = d.child_end = -1;
  for (int id = 1; id < c.num_domains(); ++id) {
    Domain& p = c.domains_[c.domains_[id].parent];
    if (p.child_begin < 0) p.child_begin = id;
    p.child_end = id + 1;
  }
  for (auto& d : c.domains_) {
    if (d.child_begin < 0) d.child_begin = d.child_end = 0;
  }
  c.max_domain_gpus_.assign(levels, 0);
  for (const Domain& d : c.domains_) {
    c.max_domain_gpus_[d.level] = std::max(c.max_domain_gpus_[d.level], d.gpu_end - d.gpu_begin);
  }

  // State: everything free and healthy.
  c.free_ = BitMask(gpu, true);
  c.healthy_ = BitMask(gpu, true);
  c.faulty_ = BitMask(gpu, false);
  c.cordoned_.assign(num_nodes, 0);
  c.node_free_healthy_.assign(num_nodes, 0);
  c.domain_free_.assign(static_cast<size_t>(c.num_domains()) * c.num_skus(), 0);
  c.hist_.assign(static_cast<size_t>(c.num_domains()) * c.num_skus() * (c.max_gpus_per_node_ + 1),
                 0);
  for (int n = 0; n < num_nodes; ++n) {
    const NodeInfo& info = c.nodes_[n];
    c.node_free_healthy_[n] = info.gpus;
    for (int d = c.NodeDomain(n); d >= 0; d = c.domains_[d].parent) {
      c.domain_free_[d * c.num_skus() + info.sku] += info.gpus;
      ++c.hist_[c.HistIndex(d, info.sku, info.gpus)];
    }
  }
  return c;
}

int Cluster::LevelByName(absl::string_view name) const {
  for (int l = 0; l < num_levels(); ++l) {
    if (level_names_[l] == name) return l;
  }
  for (int l = 0; l < num_levels(); ++l) {
    for (const std::string& a : level_aliases_[l]) {
      if (a == name) return l;
    }
  }
  return -1;
}

int Cluster::AncestorAt(int domain_id, int level) const {
  while (domain_id >= 0 && domains_[domain_id].level > level)
    domain_id = domains_[domain_id].parent;
  return domain_id;
}

std::string Cluster::DomainPath(int domain_id) const {
  if (domain_id == 0) return "cluster";
  std::vector<const std::string*> parts;
  for (int d = domain_id; d > 0; d = domains_[d].parent) parts.push_back(&domains_[d].name);
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += **it;
  }
  return out;
}

int Cluster::FindNode(absl::string_view name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

int Cluster::FindSku(absl::string_view name) const {
  for (int s = 0; s < num_skus(); ++s) {
    if (sku_names_[s] == name) return s;
  }
  return -1;
}

int Cluster::FreeHealthy(int domain_id, int sku) const {
  if (sku != kAnySku) return domain_free_[domain_id * num_skus() + sku];
  int total = 0;
  for (int s = 0; s < num_skus(); ++s) total += domain_free_[domain_id * num_skus() + s];
  return total;
}

int Cluster::NodesWithFree(int domain_id, int sku, int k) const {
  if (k < 0 || k > max_gpus_per_node_) return 0;
  if (sku != kAnySku) return hist_[HistIndex(domain_id, sku, k)];
  int total = 0;
  for (int s = 0; s < num_skus(); ++s) total += hist_[HistIndex(domain_id, s, k)];
  return total;
}

int Cluster::MemberCapacity(int domain_id, int sku, int gpus_per_member) const {
  if (gpus_per_member <= 0 || gpus_per_member > max_gpus_per_node_) return 0;
  int total = 0;
  int s_begin = sku == kAnySku ? 0 : sku, s_end = sku == kAnySku ? num_skus() : sku + 1;
  for (int s = s_begin; s < s_end; ++s) {
    const int* h = &hist_[HistIndex(domain_id, s, 0)];
    for (int k = gpus_per_member; k <= max_gpus_per_node_; ++k)
      total += h[k] * (k / gpus_per_member);
  }
  return total;
}

void Cluster::RefreshNode(int node) {
  const NodeInfo& info = nodes_[node];
  int now = static_cast<int>(
      BitMask::CountAndRange(free_, healthy_, info.gpu_begin, info.gpu_begin + info.gpus));
  int before = node_free_healthy_[node];
  if (now == before) return;
  node_free_healthy_[node] = now;
  for (int d = NodeDomain(node); d >= 0; d = domains_[d].parent) {
    domain_free_[d * num_skus() + info.sku] += now - before;
    --hist_[HistIndex(d, info.sku, before)];
    ++hist_[HistIndex(d, info.sku, now)];
  }
}

absl::Status Cluster::Allocate(std::span<const int> gpus, bool require_healthy) {
  absl::flat_hash_set<int> seen;
  for (int g : gpus) {
    if (g < 0 || g >= num_gpus())
      return absl::OutOfRangeError(absl::StrCat("GPU index ", g, " out of range"));
    if (!seen.insert(g).second)
      return absl::InvalidArgumentError(absl::StrCat("GPU ", g, " listed twice"));
    if (!free_.Test(g)) {
      return absl::FailedPreconditionError(absl::StrCat("GPU ", g - nodes_[gpu_node_[g]].gpu_begin,
                                                        " of node ", nodes_[gpu_node_[g]].name,
                                                        " is already in use"));
    }
    if (require_healthy && !healthy_.Test(g)) {
      return absl::FailedPreconditionError(absl::StrCat("GPU ", g - nodes_[gpu_node_[g]].gpu_begin,
                                                        " of node ", nodes_[gpu_node_[g]].name,
                                                        " is unhealthy"));
    }
  }
  for (int g : gpus) free_.Clear(g);
  for (int g : gpus) RefreshNode(gpu_node_[g]);  // no-op for nodes already refreshed
  return absl::OkStatus();
}

absl::Status Cluster::Release(std::span<const int> gpus) {
  absl::flat_hash_set<int> seen;
  for (int g : gpus) {
    if (g < 0 || g >= num_gpus())
      return absl::OutOfRangeError(absl::StrCat("GPU index ", g, " out of range"));
    if (!seen.insert(g).second)
      return absl::InvalidArgumentError(absl::StrCat("GPU ", g, " listed twice"));
    if (free_.Test(g)) {
      return absl::FailedPreconditionError(absl::StrCat("GPU ", g - nodes_[gpu_node_[g]].gpu_begin,
                                                        " of node ", nodes_[gpu_node_[g]].name,
                                                        " is not in use"));
    }
  }
  for (int g : gpus) free_.Set(g);
  for (int g : gpus) RefreshNode(gpu_node_[g]);
  return absl::OkStatus();
}

void Cluster::SetNodeCordoned(int node, bool cordoned) {
  if ((cordoned_[node] != 0) == cordoned) return;
  cordoned_[node] = cordoned;
  const NodeInfo& info = nodes_[node];
  for (int g = info.gpu_begin; g < info.gpu_begin + info.gpus; ++g) {
    healthy_.Assign(g, !cordoned && !faulty_.Test(g));
  }
  RefreshNode(node);
}

void Cluster::SetGpuFaulty(int gpu, bool faulty) {
  faulty_.Assign(gpu, faulty);
  healthy_.Assign(gpu, !faulty && !cordoned_[gpu_node_[gpu]]);
  RefreshNode(gpu_node_[gpu]);
}

size_t Cluster::MemoryBytes() const {
  size_t b = sizeof(*this);
  b += free_.MemoryBytes() + healthy_.MemoryBytes() + faulty_.MemoryBytes();
  b += cordoned_.capacity() + node_free_healthy_.capacity() * sizeof(int);
  b += domain_free_.capacity() * sizeof(int) + hist_.capacity() * sizeof(int);
  b += gpu_node_.capacity() * sizeof(int) + level_begin_.capacity() * sizeof(int);
  b += domains_.capacity() * sizeof(Domain);
  for (const Domain& d : domains_) b += d.name.capacity() > 15 ? d.name.capacity() : 0;
  b += nodes_.capacity() * sizeof(NodeInfo);
  for (const NodeInfo& n : nodes_) b += n.name.capacity() > 15 ? n.name.capacity() : 0;
  // flat_hash_map: one slot (key + value) and one control byte per bucket.
  b += node_index_.bucket_count() * (sizeof(std::pair<std::string, int>) + 1);
  for (const auto& [k, v] : node_index_) b += k.capacity() > 15 ? k.capacity() : 0;
  return b;
}

absl::Status Cluster::CheckInvariants() const {
  std::vector<int> free(domain_free_.size(), 0), hist(hist_.size(), 0);
  for (int n = 0; n < num_nodes(); ++n) {
    const NodeInfo& info = nodes_[n];
    int count = 0;
    for (int g = info.gpu_begin; g < info.gpu_begin + info.gpus; ++g) {
      bool want_healthy = !faulty_.Test(g) && !cordoned_[n];
      if (healthy_.Test(g) != want_healthy) {
        return absl::InternalError(absl::StrCat("healthy bit of GPU ", g, " is stale"));
      }
      count += free_.Test(g) && healthy_.Test(g);
    }
    if (count != node_free_healthy_[n]) {
      return absl::InternalError(absl::StrCat("node ", info.name, " counter ",
                                              node_free_healthy_[n], " != recount ", count));
    }
    for (int d = NodeDomain(n); d >= 0; d = domains_[d].parent) {
      free[d * num_skus() + info.sku] += count;
      ++hist[HistIndex(d, info.sku, count)];
    }
  }
  if (free != domain_free_) return absl::InternalError("domain free counters differ from recount");
  if (hist != hist_) return absl::InternalError("domain histograms differ from recount");
  return absl::OkStatus();
}

}  // namespace topogang
