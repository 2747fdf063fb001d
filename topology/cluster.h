// The in-memory model of a GPU cluster: the label hierarchy as nested domains over contiguous
// node/GPU index ranges, the free and healthy GPU bitmaps, and exact per-domain counters.
//
// Levels: 0 is the whole cluster, 1..T are the configured tiers (widest first), T+1 is the node.
// Nodes are sorted by their label path, so every domain owns one contiguous range of nodes and
// GPUs, and its children are contiguous domain ids one level down. Per domain and SKU we keep a
// histogram "how many nodes have exactly k free healthy GPUs", so both "free GPUs in D" and "how
// many g-GPU members fit in D" are answered without touching nodes.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/bitmask.h"
#include "topology/cluster_spec.h"
#include "topology/topology_config.h"

namespace topogang {

inline constexpr int kAnySku = -1;

struct Domain {
  int level = 0;
  int parent = -1;
  int child_begin = 0, child_end = 0;  // children are domain ids [child_begin, child_end)
  int node_begin = 0, node_end = 0;
  int gpu_begin = 0, gpu_end = 0;
  std::string name;      // label value; the node name at node level; "cluster" at the root
  bool unknown = false;  // this node lacked the tier's label: an isolated domain of its own
};

struct NodeInfo {
  std::string name;
  int gpu_begin = 0;
  int gpus = 0;
  int sku = 0;
};

class Cluster {
 public:
  // Builds the model. Nodes with 0 GPUs are left out. `warnings` (optional) receives one line per
  // node missing a required tier label and per tier no node carries (such a tier is dropped).
  static absl::StatusOr<Cluster> Build(const ClusterSpec& spec, const TopologyConfig& topology,
                                       std::vector<std::string>* warnings = nullptr);

  // --- Levels -------------------------------------------------------------------------------
  int num_levels() const { return static_cast<int>(level_names_.size()); }
  int node_level() const { return num_levels() - 1; }
  const std::string& LevelName(int level) const { return level_names_[level]; }
  // -1 when unknown. A tier's aliases (TierSpec::aliases) resolve too, after the names.
  int LevelByName(absl::string_view name) const;
  const std::vector<std::string>& level_names() const { return level_names_; }
  // Estimated all-reduce bus bandwidth per GPU (Gb/s) for a placement whose lowest common domain
  // is at `level`: the bottleneck over that level and every level below it.
  double SpanBandwidthGbps(int level) const { return span_bandwidth_[level]; }
  // Oversubscription of the uplinks from a domain of `level` into its parent's switches (the
  // parent tier's `oversubscription`; cluster_oversubscription for the top tier's domains; 1 for
  // the root). A domain holding few of a gang's nodes gets only their share of those uplinks.
  double UplinkOversubscription(int level) const { return uplink_oversubscription_[level]; }
  // Total GPUs in the largest domain of a level (lets the planner skip hopeless levels).
  int MaxDomainGpus(int level) const { return max_domain_gpus_[level]; }
  const TopologyConfig& topology() const { return topology_; }

  // --- Domains ------------------------------------------------------------------------------
  int num_domains() const { return static_cast<int>(domains_.size()); }
  const Domain& domain(int id) const { return domains_[id]; }
  int LevelBegin(int level) const { return level_begin_[level]; }
  int LevelEnd(int level) const { return level_begin_[level + 1]; }
  int NodeDomain(int node) const { return level_begin_[node_level()] + node; }
  int AncestorAt(int domain_id, int level) const;
  // "zone0/spine3/leaf2" (the root is "cluster").
  std::string DomainPath(int domain_id) const;

  // --- Nodes, GPUs, SKUs --------------------------------------------------------------------
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const NodeInfo& node(int i) const { return nodes_[i]; }
  int FindNode(absl::string_view name) const;  // -1 when unknown
  int num_gpus() const { return static_cast<int>(gpu_node_.size()); }
  int GpuNode(int gpu) const { return gpu_node_[gpu]; }
  int max_gpus_per_node() const { return max_gpus_per_node_; }
  int num_skus() const { return static_cast<int>(sku_names_.size()); }
  const std::string& SkuName(int sku) const { return sku_names_[sku]; }
  int FindSku(absl::string_view name) const;  // -1 when unknown
  const std::string& name() const { return name_; }

  // --- State --------------------------------------------------------------------------------
  bool IsFree(int gpu) const { return free_.Test(gpu); }
  bool IsHealthy(int gpu) const { return healthy_.Test(gpu); }
  bool IsUsable(int gpu) const { return free_.Test(gpu) && healthy_.Test(gpu); }
  int FreeHealthy(int domain_id, int sku = kAnySku) const;
  int NodeFreeHealthy(int node) const { return node_free_healthy_[node]; }
  // Nodes in the domain with exactly k free healthy GPUs (of `sku`, or any).
  int NodesWithFree(int domain_id, int sku, int k) const;
  // Members of `gpus_per_member` GPUs (each on a single node) that fit in the domain right now.
  int MemberCapacity(int domain_id, int sku, int gpus_per_member) const;
  const BitMask& free_mask() const { return free_; }
  const BitMask& healthy_mask() const { return healthy_; }

  // Marks GPUs used. All-or-nothing: fails and changes nothing if any index is out of range,
  // repeated, already used, or (with require_healthy) unhealthy. require_healthy=false is for
  // recording what is already running, e.g. pods found bound on a node that is now cordoned.
  absl::Status Allocate(std::span<const int> gpus, bool require_healthy = true);
  // Marks GPUs free. All-or-nothing: fails and changes nothing if any is out of range, repeated
  // or already free.
  absl::Status Release(std::span<const int> gpus);

  // Health. A GPU is healthy when it has no fault and its node is not cordoned/drained.
  void SetNodeCordoned(int node, bool cordoned);
  bool NodeCordoned(int node) const { return cordoned_[node] != 0; }
  void SetGpuFaulty(int gpu, bool faulty);
  bool GpuFaulty(int gpu) const { return faulty_.Test(gpu); }

  // Bytes held by the model (bitmaps, counters, domains, names).
  size_t MemoryBytes() const;
  // Recounts every counter from the bitmaps; for tests and debug checks.
  absl::Status CheckInvariants() const;

 private:
  Cluster() = default;
  int HistIndex(int domain_id, int sku, int k) const {
    return ((domain_id * num_skus()) + sku) * (max_gpus_per_node_ + 1) + k;
  }
  // Recomputes node `n`'s free-healthy count from the bitmaps and propagates the change.
  void RefreshNode(int node);

  std::string name_;
  TopologyConfig topology_;
  std::vector<std::string> level_names_;
  std::vector<std::vector<std::string>> level_aliases_;  // parallel to level_names_
  std::vector<double> span_bandwidth_;
  std::vector<double> uplink_oversubscription_;
  std::vector<int> max_domain_gpus_;
  std::vector<int> level_begin_;  // size num_levels + 1
  std::vector<Domain> domains_;
  std::vector<NodeInfo> nodes_;
  absl::flat_hash_map<std::string, int> node_index_;
  std::vector<std::string> sku_names_;
  std::vector<int> gpu_node_;
  int max_gpus_per_node_ = 0;

  BitMask free_, healthy_, faulty_;
  std::vector<char> cordoned_;
  std::vector<int> node_free_healthy_;
  std::vector<int> domain_free_;  // [domain * num_skus + sku]
  std::vector<int> hist_;         // see HistIndex
};

}  // namespace topogang
