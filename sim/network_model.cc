#include "sim/network_model.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace topogang::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Per domain the ring touches: the job's GPUs under it and the ring edge endpoints crossing its
// boundary (leaving + entering). Edges inside one NVLink domain use NVLink and cross nothing.
struct DomainLoad {
  long gpus = 0;
  int ends = 0;
};

absl::flat_hash_map<int, DomainLoad> RingLoads(const Cluster& c,
                                               const std::vector<char>& nvlink_level,
                                               const std::vector<int>& units,
                                               const std::vector<int>& gpus) {
  absl::flat_hash_map<int, DomainLoad> load;
  const size_t m = units.size();
  if (m < 2) return load;
  for (size_t i = 0; i < m; ++i) {
    for (int d = units[i]; d > 0; d = c.domain(d).parent) load[d].gpus += gpus[i];
  }
  for (size_t i = 0; i < m; ++i) {
    const int u = units[i], w = units[(i + 1) % m];
    int a = u, b = w;  // lowest common ancestor
    while (a != b) {
      if (c.domain(a).level >= c.domain(b).level) {
        a = c.domain(a).parent;
      } else {
        b = c.domain(b).parent;
      }
    }
    bool nvlink = false;
    for (int d = a; d > 0 && !nvlink; d = c.domain(d).parent) {
      nvlink = nvlink_level[c.domain(d).level];
    }
    if (nvlink) continue;
    for (int d = u; d != a; d = c.domain(d).parent) ++load[d].ends;
    for (int d = w; d != a; d = c.domain(d).parent) ++load[d].ends;
  }
  return load;
}

// Whether a domain's uplinks are shared between jobs (switch tiers above the node).
bool Shared(const Cluster& c, const std::vector<char>& nvlink_level, int d) {
  const int level = c.domain(d).level;
  return level < c.node_level() && !nvlink_level[level];
}

}  // namespace

double NvlinkGBytesPerSec(absl::string_view sku) {
  const std::string s = absl::AsciiStrToUpper(sku);
  // NVLink 5: 1.8 TB/s bidirectional per GPU (B200, GB200, B300, GB300).
  if (absl::StrContains(s, "B200") || absl::StrContains(s, "B300") || absl::StrContains(s, "GB")) {
    return 900;
  }
  // NVLink 3: 600 GB/s bidirectional per GPU (A100 SXM).
  if (absl::StrContains(s, "A100")) return 300;
  // NVLink 4: 900 GB/s bidirectional per GPU (H100/H200 SXM); the default.
  return 450;
}

// Units (nodes, or NVLink domains) in ring order with the job's GPUs on each.
struct NetworkModel::Ring {
  std::vector<int> units;  // domain ids
  std::vector<int> gpus;
  std::vector<double> nvlink;  // NVLink GB/s per direction of each unit's GPUs
  long total_gpus = 0;
};

NetworkModel::NetworkModel(const Cluster& cluster, NetworkParams params) : c_(cluster), p_(params) {
  for (int s = 0; s < c_.num_skus(); ++s) nvlink_.push_back(NvlinkGBytesPerSec(c_.SkuName(s)));
  const TopologyConfig& topo = c_.topology();
  nvlink_level_.assign(c_.num_levels(), 0);
  oversub_.assign(c_.num_levels(), 1);
  oversub_[0] = std::max(1.0, topo.cluster_oversubscription);
  for (int l = 1; l < c_.node_level(); ++l) {
    for (const TierSpec& t : topo.tiers) {
      if (t.name != c_.LevelName(l)) continue;
      oversub_[l] = std::max(1.0, t.oversubscription);
      if (IsNvlinkTier(t.name, t.label)) {
        nvlink_level_[l] = 1;
        if (nvlink_domain_level_ < 0) nvlink_domain_level_ = l;
      }
    }
  }
}

double NetworkModel::Oversubscription(int level) const { return oversub_[level]; }

NetworkModel::Ring NetworkModel::BuildRing(std::span<const MemberPlacement> members,
                                           bool per_nvlink_domain) const {
  Ring r;
  absl::flat_hash_map<int, int> index;  // unit -> position
  for (const MemberPlacement& m : members) {
    if (m.node < 0 || m.gpus.empty()) continue;
    int unit = c_.NodeDomain(m.node);
    if (per_nvlink_domain && nvlink_domain_level_ > 0) {
      unit = c_.AncestorAt(unit, nvlink_domain_level_);
    }
    auto [it, added] = index.try_emplace(unit, static_cast<int>(r.units.size()));
    if (added) {
      r.units.push_back(unit);
      r.gpus.push_back(0);
      r.nvlink.push_back(kInf);
    }
    r.gpus[it->second] += static_cast<int>(m.gpus.size());
    r.nvlink[it->second] = std::min(r.nvlink[it->second], nvlink_[c_.node(m.node).sku]);
    r.total_gpus += static_cast<long>(m.gpus.size());
  }
  return r;
}

PreparedAllReduce::Algo NetworkModel::PrepareAlgo(const Ring& r, double bytes,
                                                  bool hierarchical) const {
  PreparedAllReduce::Algo a;
  a.n = r.total_gpus;
  a.units = r.units.size();
  a.bytes = bytes;
  a.nvlink = kInf;
  for (size_t i = 0; i < r.units.size(); ++i) {
    const int g = r.gpus[i];
    if (hierarchical) {
      if (g >= 2) a.intra_s = std::max(a.intra_s, 2.0 * (g - 1) / g * bytes / (r.nvlink[i] * 1e9));
    } else if (g >= 2 || nvlink_domain_level_ > 0) {
      // NVLink per GPU: used by every GPU whose ring neighbour is on its node or NVLink domain.
      a.nvlink = std::min(a.nvlink, r.nvlink[i]);
    }
  }
  if (hierarchical && a.units < 2) return a;  // no ring between domains
  // Over every domain the ring leaves: its capacity for this job / the ring edges leaving it.
  for (const auto& [d, l] : RingLoads(c_, nvlink_level_, r.units, r.gpus)) {
    if (l.ends == 0) continue;
    const int level = c_.domain(d).level;
    PreparedAllReduce::Link link;
    link.domain = d;
    link.shared = Shared(c_, nvlink_level_, d);
    link.gpus = l.gpus;
    link.own = static_cast<double>(l.gpus) * p_.nic_gbytes_s;
    link.fixed = link.own / oversub_[level - 1];
    link.total =
        (c_.domain(d).gpu_end - c_.domain(d).gpu_begin) * p_.nic_gbytes_s / oversub_[level - 1];
    link.leaving = l.ends / 2.0;
    a.links.push_back(link);
  }
  return a;
}

PreparedAllReduce NetworkModel::Prepare(std::span<const MemberPlacement> members,
                                        double bytes) const {
  PreparedAllReduce out;
  out.c_ = &c_;
  out.ring_ = PrepareAlgo(BuildRing(members, /*per_nvlink_domain=*/false), bytes, false);
  out.hier_ = PrepareAlgo(BuildRing(members, /*per_nvlink_domain=*/true), bytes, true);
  for (const PreparedAllReduce::Link& l : out.ring_.links) {
    if (l.shared) out.uplink_use_[l.domain] = l.gpus;
  }
  for (PreparedAllReduce::Algo* a : {&out.ring_, &out.hier_}) {
    for (PreparedAllReduce::Link& l : a->links) {
      auto it = out.uplink_use_.find(l.domain);
      if (it != out.uplink_use_.end()) l.self = it->second;
    }
  }
  return out;
}

double PreparedAllReduce::Bottleneck(const Algo& a, const UplinkLoad* load, bool self_in_load,
                                     std::string* where) const {
  double best = kInf;
  int best_domain = -1;
  for (const Link& l : a.links) {
    double cap = l.fixed;
    if (load != nullptr && l.shared) {
      auto it = load->find(l.domain);
      const double other =
          it == load->end() ? 0 : static_cast<double>(it->second - (self_in_load ? l.self : 0));
      cap = std::min(l.own, l.total * l.gpus / (l.gpus + other));
    }
    const double bw = cap / l.leaving;
    if (bw < best || (bw == best && l.domain < best_domain)) best = bw, best_domain = l.domain;
  }
  if (where != nullptr && best_domain >= 0) {
    const Cluster& c = *c_;
    *where = c.domain(best_domain).level == c.node_level()
                 ? absl::StrCat("nic ", c.domain(best_domain).name)
                 : absl::StrCat("uplink ", c.DomainPath(best_domain));
  }
  return best;
}

CollectiveCost PreparedAllReduce::Ring(const UplinkLoad* load, bool self_in_load) const {
  CollectiveCost out;
  out.bottleneck = "none";
  const Algo& a = ring_;
  if (a.n < 2) return out;
  double bw = a.nvlink;
  if (bw < kInf) out.bottleneck = "nvlink";
  std::string where;
  const double net = Bottleneck(a, load, self_in_load, &where);
  if (net < bw) bw = net, out.bottleneck = where;
  if (bw == kInf) return out;
  out.busbw_gbytes_s = bw;
  out.seconds = 2.0 * (a.n - 1) / a.n * a.bytes / (bw * 1e9);
  return out;
}

CollectiveCost PreparedAllReduce::Hierarchical(const UplinkLoad* load, bool self_in_load) const {
  CollectiveCost out;
  out.bottleneck = "none";
  const Algo& a = hier_;
  if (a.n < 2) return out;
  double inter = 0;
  std::string where;
  if (a.units >= 2) {
    const double net = Bottleneck(a, load, self_in_load, &where);
    inter = 2.0 * (a.units - 1) / a.units * a.bytes / (net * 1e9);
  }
  out.seconds = a.intra_s + inter;
  out.bottleneck = inter >= a.intra_s ? where : "nvlink";
  out.busbw_gbytes_s = out.seconds > 0 ? a.bytes / out.seconds * 2.0 * (a.n - 1) / a.n / 1e9 : 0;
  return out;
}

CollectiveCost PreparedAllReduce::Best(const UplinkLoad* load, bool self_in_load) const {
  CollectiveCost ring = Ring(load, self_in_load);
  CollectiveCost hier = Hierarchical(load, self_in_load);
  return hier.seconds < ring.seconds ? hier : ring;
}

CollectiveCost NetworkModel::RingAllReduce(std::span<const MemberPlacement> members, double bytes,
                                           const UplinkLoad* others) const {
  return Prepare(members, bytes).Ring(others);
}

CollectiveCost NetworkModel::HierarchicalAllReduce(std::span<const MemberPlacement> members,
                                                   double bytes, const UplinkLoad* others) const {
  return Prepare(members, bytes).Hierarchical(others);
}

CollectiveCost NetworkModel::AllReduce(std::span<const MemberPlacement> members, double bytes,
                                       const UplinkLoad* others) const {
  return Prepare(members, bytes).Best(others);
}

std::vector<MemberPlacement> NetworkModel::CompactPlacement(int members, int gpus_per_member,
                                                            int only_sku) const {
  std::vector<MemberPlacement> best;
  double best_s = kInf;
  for (int sku = 0; sku < c_.num_skus(); ++sku) {
    if (only_sku != kAnySku && sku != only_sku) continue;
    std::vector<MemberPlacement> p;
    for (int node = 0; node < c_.num_nodes() && static_cast<int>(p.size()) < members; ++node) {
      const NodeInfo& info = c_.node(node);
      if (info.sku != sku) continue;
      for (int k = 0; k + gpus_per_member <= info.gpus && static_cast<int>(p.size()) < members;
           k += gpus_per_member) {
        MemberPlacement mp{node, {}};
        for (int g = 0; g < gpus_per_member; ++g) mp.gpus.push_back(info.gpu_begin + k + g);
        p.push_back(std::move(mp));
      }
    }
    if (static_cast<int>(p.size()) < members) continue;
    const double s = AllReduce(p, 1e9).seconds;
    if (best.empty() || s < best_s) best = std::move(p), best_s = s;
  }
  return best;
}

}  // namespace topogang::sim
