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

// Slowest NIC/uplink on the ring of units, per GB/s of each edge: over every domain the ring
// leaves, its capacity for this job / the ring edges leaving it.
double NetBottleneck(const Cluster& c, const std::vector<char>& nvlink_level,
                     const std::vector<double>& oversub, double nic, const std::vector<int>& units,
                     const std::vector<int>& gpus, const UplinkLoad* others, std::string* where) {
  double best = kInf;
  int best_domain = -1;
  for (const auto& [d, l] : RingLoads(c, nvlink_level, units, gpus)) {
    if (l.ends == 0) continue;
    const int level = c.domain(d).level;
    const double leaving = l.ends / 2.0;
    const double own = static_cast<double>(l.gpus) * nic;
    double cap = own / oversub[level - 1];
    if (others != nullptr && Shared(c, nvlink_level, d)) {
      auto it = others->find(d);
      const double other = it == others->end() ? 0 : static_cast<double>(it->second);
      const double total = (c.domain(d).gpu_end - c.domain(d).gpu_begin) * nic / oversub[level - 1];
      cap = std::min(own, total * l.gpus / (l.gpus + other));
    }
    const double bw = cap / leaving;
    if (bw < best || (bw == best && d < best_domain)) best = bw, best_domain = d;
  }
  if (where != nullptr && best_domain >= 0) {
    *where = c.domain(best_domain).level == c.node_level()
                 ? absl::StrCat("nic ", c.domain(best_domain).name)
                 : absl::StrCat("uplink ", c.DomainPath(best_domain));
  }
  return best;
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

bool IsNvlinkTier(absl::string_view name, absl::string_view label) {
  const std::string n = absl::AsciiStrToLower(name);
  return n == "nvlink" || n == "accelerator" || absl::StrContains(label, "clique") ||
         absl::StrContains(label, "memory_fabric") || absl::StrContains(label, "accelerator");
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

UplinkLoad NetworkModel::RingUplinkUse(std::span<const MemberPlacement> members) const {
  UplinkLoad out;
  const Ring r = BuildRing(members, /*per_nvlink_domain=*/false);
  for (const auto& [d, l] : RingLoads(c_, nvlink_level_, r.units, r.gpus)) {
    if (l.ends > 0 && Shared(c_, nvlink_level_, d)) out[d] = l.gpus;
  }
  return out;
}

CollectiveCost NetworkModel::RingAllReduce(std::span<const MemberPlacement> members, double bytes,
                                           const UplinkLoad* others) const {
  CollectiveCost out;
  out.bottleneck = "none";
  const Ring r = BuildRing(members, /*per_nvlink_domain=*/false);
  const long n = r.total_gpus;
  if (n < 2) return out;
  double bw = kInf;
  // NVLink per GPU: used by every GPU whose ring neighbour is on the same node or NVLink domain.
  for (size_t i = 0; i < r.units.size(); ++i) {
    if (r.gpus[i] >= 2 || nvlink_domain_level_ > 0) {
      if (r.nvlink[i] < bw) bw = r.nvlink[i], out.bottleneck = "nvlink";
    }
  }
  std::string where;
  const double net =
      NetBottleneck(c_, nvlink_level_, oversub_, p_.nic_gbytes_s, r.units, r.gpus, others, &where);
  if (net < bw) bw = net, out.bottleneck = where;
  if (bw == kInf) return out;
  out.busbw_gbytes_s = bw;
  out.seconds = 2.0 * (n - 1) / n * bytes / (bw * 1e9);
  return out;
}

CollectiveCost NetworkModel::HierarchicalAllReduce(std::span<const MemberPlacement> members,
                                                   double bytes, const UplinkLoad* others) const {
  CollectiveCost out;
  out.bottleneck = "none";
  const Ring r = BuildRing(members, /*per_nvlink_domain=*/true);
  const long n = r.total_gpus;
  if (n < 2) return out;
  double intra = 0;
  std::string intra_where = "nvlink";
  for (size_t i = 0; i < r.units.size(); ++i) {
    const int g = r.gpus[i];
    if (g < 2) continue;
    intra = std::max(intra, 2.0 * (g - 1) / g * bytes / (r.nvlink[i] * 1e9));
  }
  double inter = 0;
  std::string where;
  const size_t m = r.units.size();
  if (m >= 2) {
    const double net = NetBottleneck(c_, nvlink_level_, oversub_, p_.nic_gbytes_s, r.units, r.gpus,
                                     others, &where);
    inter = 2.0 * (m - 1) / m * bytes / (net * 1e9);
  }
  out.seconds = intra + inter;
  out.bottleneck = inter >= intra ? where : intra_where;
  out.busbw_gbytes_s = out.seconds > 0 ? bytes / out.seconds * 2.0 * (n - 1) / n / 1e9 : 0;
  return out;
}

CollectiveCost NetworkModel::AllReduce(std::span<const MemberPlacement> members, double bytes,
                                       const UplinkLoad* others) const {
  CollectiveCost ring = RingAllReduce(members, bytes, others);
  CollectiveCost hier = HierarchicalAllReduce(members, bytes, others);
  return hier.seconds < ring.seconds ? hier : ring;
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
