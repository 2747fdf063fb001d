#include "topology/label_family.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace topogang {
namespace {

// Label keys and where they come from (read in these sources; docs/bring-your-own-cluster.md):
//  - NVIDIA/topograph pkg/topology/topology.go (v1.0): KeyFabricTierPrefix
//    "fabric.topograph.run/tier-", KeyTopologyXclrDomain, KeyTopologyXclrSubDomain; and
//    docs/reference/node-labels.md at v0.5.0 for network.topology.nvidia.com/*.
//  - kubernetes/cloud-provider-aws pkg/providers/v1/well_known_labels.go: LabelNetworkNodePrefix
//    "topology.k8s.aws/network-node-layer-" + 1..len(NetworkNodes) (3 or 4; 1 is the top).
//    topology.k8s.aws/ultraserver-id (SageMaker HyperPod) per Topograph's node-labels.md.
//  - GKE: cloud.google.com/gce-topology-{block,subblock,host} (Topograph's node-labels.md,
//    "Without Topograph"; GKE's topology-aware scheduling guides).
//  - OKE: oracle-quickstart/oci-hpc-oke docs/using-rdma-network-locality-when-running-
//    workloads-on-oke.md (rdma.*: local block = tier 0, network block = 1, HPC island = 2) and
//    docs/oci-hpc-oke-utils.md (host.gpu_memory_fabric_id on GB200/GB300 shapes); the
//    host.{network_block_id,rack_id} keys per Topograph's node-labels.md ("Without Topograph").
//  - nvidia.com/gpu.clique: GPU operator, "<ClusterUUID>.<CliqueID>" on MNNVL nodes only.
constexpr char kClique[] = "nvidia.com/gpu.clique";
constexpr int kMaxNumbered = 16;  // numbered tiers read: N in [first, first + 16)

// Per-GPU bandwidths of the tiers a family yields (Gb/s). A network tier: one 400G NIC per GPU.
// An NVLink domain (NVL72-class, the only kind that gets a label): NVLink 5, 1.8 TB/s per GPU,
// which is then also the node's.
constexpr double kNetworkGbps = 400;
constexpr double kNvlinkGbps = 14400;

struct Key {
  const char* name;   // tier name
  const char* label;  // label key
};

// Fabric tiers numbered in the key, e.g. fabric.topograph.run/tier-0.
struct Numbered {
  const char* prefix;
  int first;                 // lowest N written
  bool lowest_is_narrowest;  // Topograph: tier-0 is nearest the node; AWS: layer-1 is the top
  const char* tier_name;     // "tier-" + N
};

struct Family {
  const char* name;
  const char* title;  // for reports: "NVIDIA Topograph v1"
  std::optional<Numbered> numbered;
  std::vector<Key> fabric;       // fixed fabric tiers, widest first (when not numbered)
  std::vector<Key> accelerator;  // NVLink-domain tiers, widest first; optional
  std::vector<Key> tail;         // optional tiers below the NVLink domain (GKE's host)
};

const std::vector<Family>& Families() {
  static const auto* families = new std::vector<Family>{
      {"topograph-v1",
       "NVIDIA Topograph v1",
       Numbered{"fabric.topograph.run/tier-", 0, true, "tier-"},
       {},
       {{"accelerator", "accelerator.topograph.run/domain"},
        {"sub-domain", "accelerator.topograph.run/sub-domain"}},
       {}},
      {"topograph",
       "NVIDIA Topograph (before v1)",
       std::nullopt,
       {{"core", "network.topology.nvidia.com/core"},
        {"spine", "network.topology.nvidia.com/spine"},
        {"leaf", "network.topology.nvidia.com/leaf"}},
       {{"accelerator", "network.topology.nvidia.com/accelerator"}},
       {}},
      {"aws",
       "AWS",
       Numbered{"topology.k8s.aws/network-node-layer-", 1, false, "layer-"},
       {},
       {{"ultraserver", "topology.k8s.aws/ultraserver-id"}},
       {}},
      {"gke",
       "GKE",
       std::nullopt,
       {{"block", "cloud.google.com/gce-topology-block"},
        {"subblock", "cloud.google.com/gce-topology-subblock"}},
       {},
       {{"host", "cloud.google.com/gce-topology-host"}}},
      {"oci",
       "OCI",
       std::nullopt,
       {{"hpc-island", "oci.oraclecloud.com/rdma.hpc_island_id"},
        {"network-block", "oci.oraclecloud.com/rdma.network_block_id"},
        {"local-block", "oci.oraclecloud.com/rdma.local_block_id"}},
       {{"nvlink", "oci.oraclecloud.com/host.gpu_memory_fabric_id"}},
       {}},
      {"oci-host",
       "OCI (host labels)",
       std::nullopt,
       {{"network-block", "oci.oraclecloud.com/host.network_block_id"},
        {"rack", "oci.oraclecloud.com/host.rack_id"}},
       {{"nvlink", "oci.oraclecloud.com/host.gpu_memory_fabric_id"}},
       {}},
  };
  return *families;
}

// N of a numbered key; nullopt when the key does not have the prefix. `*bad` is set for a key
// with the prefix but no usable number ("tier-x", "tier-007", "tier-99"): never a tier.
std::optional<int> NumberOf(const Numbered& n, absl::string_view key, bool* bad) {
  if (!absl::StartsWith(key, n.prefix)) return std::nullopt;
  absl::string_view digits = key.substr(std::char_traits<char>::length(n.prefix));
  int v = 0;
  if (digits.empty() || digits.size() > 2 || (digits.size() > 1 && digits[0] == '0') ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(digits, &v) || v < n.first || v >= n.first + kMaxNumbered) {
    *bad = true;
    return std::nullopt;
  }
  return v;
}

// What the GPU nodes carry of one family.
struct Presence {
  int nodes = 0;          // GPU nodes carrying any of its labels
  uint32_t numbered = 0;  // bit N - first: some node has that numbered tier
  std::vector<bool> fabric, accelerator, tail;
};

enum class Match { kNone, kNetwork, kAccelerator };

// Marks the keys of `f` in `key`; says whether the key belongs to the family, and whether it is
// one of its network tiers or only an NVLink-domain key (which several families share: OCI's
// gpu_memory_fabric_id, so it cannot tell them apart).
Match Mark(const Family& f, absl::string_view key, Presence* p, std::set<std::string>* ignored) {
  if (f.numbered) {
    bool bad = false;
    if (std::optional<int> n = NumberOf(*f.numbered, key, &bad)) {
      p->numbered |= uint32_t{1} << (*n - f.numbered->first);
      return Match::kNetwork;
    }
    if (bad) {
      if (ignored->size() < 5) ignored->insert(std::string(key.substr(0, 80)));
      return Match::kNone;
    }
  }
  auto mark = [&](const std::vector<Key>& keys, std::vector<bool>* seen) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (key == keys[i].label) {
        (*seen)[i] = true;
        return true;
      }
    }
    return false;
  };
  if (mark(f.fabric, &p->fabric) || mark(f.tail, &p->tail)) return Match::kNetwork;
  return mark(f.accelerator, &p->accelerator) ? Match::kAccelerator : Match::kNone;
}

std::string NodeList(const std::vector<const NodeSpec*>& nodes) {
  std::vector<std::string> names;
  for (size_t i = 0; i < nodes.size() && i < 5; ++i) names.push_back(nodes[i]->name);
  std::string out = absl::StrJoin(names, ", ");
  if (nodes.size() > 5) absl::StrAppend(&out, ", ... ", nodes.size() - 5, " more");
  return out;
}

std::string TierList(const TopologyConfig& t) {
  std::vector<std::string> names, labels, aliases;
  for (const TierSpec& s : t.tiers) {
    names.push_back(s.name);
    labels.push_back(s.label);
    for (const std::string& a : s.aliases) aliases.push_back(absl::StrCat(a, " = ", s.name));
  }
  std::string out =
      absl::StrCat(absl::StrJoin(names, " > "), " (", absl::StrJoin(labels, ", "), ")");
  if (!aliases.empty()) absl::StrAppend(&out, "; also named ", absl::StrJoin(aliases, ", "));
  return out;
}

// The generic names jobs use (`required_tier: leaf`, `nvlink`) for tiers a family names its own
// way (tier-0, layer-3, local-block, domain...): the narrowest network tier is also "leaf", the
// next "spine", the next "core"; the widest NVLink-domain tier "nvlink". A name some tier already
// has is never an alias.
void AddAliases(TopologyConfig* t, const std::vector<bool>& network_tier) {
  auto taken = [&](const std::string& name) {
    for (const TierSpec& s : t->tiers) {
      if (s.name == name) return true;
      for (const std::string& a : s.aliases) {
        if (a == name) return true;
      }
    }
    return false;
  };
  const char* generic[] = {"leaf", "spine", "core"};
  int next = 0;
  for (int i = static_cast<int>(t->tiers.size()) - 1; i >= 0 && next < 3; --i) {
    if (!network_tier[i]) continue;
    if (!taken(generic[next])) t->tiers[i].aliases.push_back(generic[next]);
    ++next;
  }
  for (size_t i = 0; i < t->tiers.size(); ++i) {
    if (network_tier[i]) continue;
    if (!taken("nvlink") && t->tiers[i].bandwidth_gbps >= kNvlinkGbps) {
      t->tiers[i].aliases.push_back("nvlink");
    }
    break;
  }
}

std::string KnownFamilies() {
  std::vector<std::string> names;
  for (const Family& f : Families()) names.push_back(f.name);
  names.push_back(kClique);
  return absl::StrJoin(names, ", ");
}

}  // namespace

bool IsFamilyLabel(absl::string_view key) {
  if (key == kClique) return true;
  std::set<std::string> ignored;
  for (const Family& f : Families()) {
    Presence p;
    p.fabric.resize(f.fabric.size());
    p.accelerator.resize(f.accelerator.size());
    p.tail.resize(f.tail.size());
    if (Mark(f, key, &p, &ignored) != Match::kNone) return true;
  }
  return false;
}

TopologyDetection DetectTopology(const std::vector<NodeSpec>& nodes, const TopologyConfig& base) {
  const std::vector<Family>& families = Families();
  std::vector<Presence> presence(families.size());
  for (size_t f = 0; f < families.size(); ++f) {
    presence[f].fabric.resize(families[f].fabric.size());
    presence[f].accelerator.resize(families[f].accelerator.size());
    presence[f].tail.resize(families[f].tail.size());
  }
  std::set<std::string> ignored;
  std::vector<const NodeSpec*> gpu_nodes;
  std::vector<uint32_t> carried;  // per GPU node: bit f = carries family f
  // A family is carried by a node through its network tiers; its NVLink-domain keys count only
  // when no family's network tiers are on any node (a cluster labelled with domains alone).
  std::vector<uint32_t> accel_only;  // per GPU node: bit f = only family f's NVLink keys
  std::vector<int> accel_nodes(families.size(), 0);
  int clique_nodes = 0;
  for (const NodeSpec& n : nodes) {
    if (n.gpus <= 0) continue;
    uint32_t mask = 0, accel = 0;
    for (const auto& [key, value] : n.labels) {
      if (key == kClique) continue;
      for (size_t f = 0; f < families.size(); ++f) {
        Match m = Mark(families[f], key, &presence[f], &ignored);
        if (m == Match::kNetwork) mask |= uint32_t{1} << f;
        if (m == Match::kAccelerator) accel |= uint32_t{1} << f;
      }
    }
    for (size_t f = 0; f < families.size(); ++f) {
      presence[f].nodes += (mask >> f) & 1;
      accel_nodes[f] += (accel >> f) & 1;
    }
    clique_nodes += n.labels.count(kClique) > 0;
    gpu_nodes.push_back(&n);
    carried.push_back(mask);
    accel_only.push_back(accel & ~mask);
  }
  const bool any_network =
      std::any_of(presence.begin(), presence.end(), [](const Presence& p) { return p.nodes > 0; });
  if (!any_network) {
    for (size_t f = 0; f < families.size(); ++f) presence[f].nodes = accel_nodes[f];
    carried = accel_only;
  }

  TopologyDetection d;
  d.gpu_nodes = static_cast<int>(gpu_nodes.size());
  d.topology = base;
  d.topology.detect = false;
  d.topology.tiers.clear();
  auto tier = [](std::string name, std::string label, double gbps, bool optional) {
    return TierSpec{std::move(name), std::move(label), gbps, 1, optional};
  };
  // The family carried by the most GPU nodes; ties go to the earlier (more deliberate) one.
  int chosen = -1;
  for (size_t f = 0; f < families.size(); ++f) {
    if (presence[f].nodes > 0 && (chosen < 0 || presence[f].nodes > presence[chosen].nodes)) {
      chosen = static_cast<int>(f);
    }
  }
  bool nvlink = false;
  std::vector<bool> network_tier;  // per tier pushed: a network (switch) tier, not NVLink/host
  auto push = [&](TierSpec t, bool network) {
    d.topology.tiers.push_back(std::move(t));
    network_tier.push_back(network);
  };
  if (chosen >= 0) {
    const Family& f = families[chosen];
    const Presence& p = presence[chosen];
    d.family = f.name;
    d.matching_nodes = p.nodes;
    if (f.numbered) {
      for (int i = 0; i < kMaxNumbered; ++i) {
        int bit = f.numbered->lowest_is_narrowest ? kMaxNumbered - 1 - i : i;  // widest first
        if (!((p.numbered >> bit) & 1)) continue;
        int number = f.numbered->first + bit;
        push(tier(absl::StrCat(f.numbered->tier_name, number),
                  absl::StrCat(f.numbered->prefix, number), kNetworkGbps, false),
             true);
      }
    }
    for (size_t i = 0; i < f.fabric.size(); ++i) {
      if (p.fabric[i]) push(tier(f.fabric[i].name, f.fabric[i].label, kNetworkGbps, false), true);
    }
    for (size_t i = 0; i < f.accelerator.size(); ++i) {
      if (!p.accelerator[i]) continue;
      push(tier(f.accelerator[i].name, f.accelerator[i].label, kNvlinkGbps, true), false);
      nvlink = true;
    }
    if (!nvlink && clique_nodes > 0) {
      push(tier("nvlink", kClique, kNvlinkGbps, true), false);
      nvlink = true;
    }
    for (size_t i = 0; i < f.tail.size(); ++i) {
      if (p.tail[i]) push(tier(f.tail[i].name, f.tail[i].label, kNetworkGbps, true), false);
    }
    AddAliases(&d.topology, network_tier);
    d.summary = absl::StrCat("topology: detected ", f.title, " labels on ", p.nodes, " of ",
                             d.gpu_nodes, " GPU nodes: tiers ", TierList(d.topology));
    std::vector<std::string> unused;
    for (size_t o = 0; o < families.size(); ++o) {
      if (static_cast<int>(o) != chosen && presence[o].nodes > 0) {
        unused.push_back(absl::StrCat(families[o].name, " on ", presence[o].nodes));
      }
    }
    if (!unused.empty()) {
      absl::StrAppend(&d.summary, "; also carried, not used: ", absl::StrJoin(unused, ", "));
    }
    // The GPU nodes without the chosen family, grouped by what they carry instead.
    if (p.nodes < d.gpu_nodes) {
      std::vector<std::vector<const NodeSpec*>> by(families.size() + 1);
      for (size_t i = 0; i < gpu_nodes.size(); ++i) {
        if ((carried[i] >> chosen) & 1) continue;
        size_t other = families.size();  // none
        for (size_t o = 0; o < families.size(); ++o) {
          if ((carried[i] >> o) & 1) {
            other = o;
            break;
          }
        }
        by[other].push_back(gpu_nodes[i]);
      }
      std::vector<std::string> groups;
      for (size_t o = 0; o < by.size(); ++o) {
        if (by[o].empty()) continue;
        groups.push_back(absl::StrCat(by[o].size(),
                                      o < families.size()
                                          ? absl::StrCat(" carry ", families[o].name)
                                          : std::string(" carry none"),
                                      " (", NodeList(by[o]), ")"));
      }
      d.reports.push_back(absl::StrCat("topology: mixed labels: ", d.gpu_nodes - p.nodes, " of ",
                                       d.gpu_nodes, " GPU nodes carry no ", f.name,
                                       " labels and each becomes its own unknown(...) "
                                       "domain, never grouped with other nodes: ",
                                       absl::StrJoin(groups, "; "),
                                       ". Label them, or name the tiers in the topology section"));
    }
  } else if (clique_nodes > 0) {
    d.family = "gpu-clique";
    d.matching_nodes = clique_nodes;
    push(tier("nvlink", kClique, kNvlinkGbps, true), false);
    nvlink = true;
    d.summary = absl::StrCat("topology: no network labels; ", kClique, " on ", clique_nodes, " of ",
                             d.gpu_nodes, " GPU nodes: tiers ", TierList(d.topology));
    d.reports.push_back(absl::StrCat(
        "topology: no GPU node carries network topology labels (", KnownFamilies(),
        "): only NVLink domains are known, and any placement across them is scored at the "
        "cluster bandwidth"));
  } else {
    d.summary = d.gpu_nodes == 0
                    ? "topology: no GPU nodes yet; tiers are detected from the first ones"
                    : absl::StrCat("topology: no topology labels on any of ", d.gpu_nodes,
                                   " GPU nodes: no tiers (one flat cluster)");
    if (d.gpu_nodes > 0) {
      d.reports.push_back(
          absl::StrCat("topology: none of the ", d.gpu_nodes,
                       " GPU nodes carries labels of a known family (", KnownFamilies(),
                       "): the cluster is flat, any placement across nodes is scored at the "
                       "cluster bandwidth. Name your labels in the topology section's tiers"));
    }
  }
  d.topology.preset = d.family.empty() ? "auto" : d.family;
  if (nvlink) d.topology.node_bandwidth_gbps = kNvlinkGbps;
  if (base.node_bandwidth_given) d.topology.node_bandwidth_gbps = base.node_bandwidth_gbps;
  if (!ignored.empty()) {
    d.reports.push_back(absl::StrCat("topology: ignored labels with no usable tier number: ",
                                     absl::StrJoin(ignored, ", ")));
  }
  return d;
}

}  // namespace topogang
