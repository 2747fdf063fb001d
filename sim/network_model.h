// An all-reduce cost model written from how NCCL moves data, independent of the planner's score
// (Cluster::SpanBandwidthGbps): it looks at which nodes the members use, in which order, how
// many of the job's GPUs sit under each switch, the NICs those GPUs own, and NVLink per GPU
// generation. The simulator uses it to turn a placement into run time (`--comm-model network`)
// so that a policy cannot win by optimising the yardstick itself. See docs/network-model.md.
//
// Bandwidth term only: for the large messages of data-parallel training the time of a collective
// is S / bandwidth; the latency term does not depend on where the members are to first order.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "scheduler/placement.h"
#include "topology/cluster.h"
#include "topology/nvlink_tier.h"  // IsNvlinkTier: which tiers are NVLink domains

namespace topogang::sim {

// Published link speeds, per GPU and per direction, in GB/s (bytes).
struct NetworkParams {
  // One 400 Gb/s NIC per GPU: HGX H100 has 8x ConnectX-7 400 Gb/s (NVIDIA DGX H100 user guide,
  // "eight ConnectX-7 ... 400 Gb/s"); GB200 NVL72 compute trays likewise one CX-7 per GPU.
  double nic_gbytes_s = 50;
};

// NVLink bandwidth per GPU per direction (GB/s) by GPU model name: NVLink 3 (A100) 600 GB/s
// bidirectional, NVLink 4 (H100/H200) 900 GB/s, NVLink 5 (B200/GB200/B300) 1.8 TB/s (NVIDIA
// NVLink product page). Unknown models get NVLink 4.
double NvlinkGBytesPerSec(absl::string_view sku);

struct CollectiveCost {
  double seconds = 0;
  // NCCL's bus bandwidth (nccl-tests doc/PERFORMANCE.md): algbw = S/t and for all-reduce
  // busbw = algbw * 2(n-1)/n, comparable with the bottleneck link's speed. GB/s.
  double busbw_gbytes_s = 0;
  std::string bottleneck;  // "none", "nvlink", "nic <node>", "uplink <domain path>"
};

// GPUs of other running jobs whose rings leave each switch domain (domain id -> GPUs under it):
// with it, a domain's uplinks are shared among the jobs actually using them instead of each GPU
// getting its fully loaded share. Node NICs and NVLink domains are never shared (one NIC per GPU).
using UplinkLoad = absl::flat_hash_map<int, long>;

// One placement's all-reduce with everything but the other jobs' uplink use worked out once
// (the ring, the domains it crosses, NVLink): the simulator re-prices a running job each time
// a job sharing its uplinks starts or ends, which a fresh NetworkModel::AllReduce would do in
// time proportional to the members. The same figures, to the bit, as NetworkModel's calls.
class PreparedAllReduce {
 public:
  // `load`: the running jobs' uplink use; `self_in_load`: it counts this placement's own
  // uplink_use() (a running job re-priced), which is then left out.
  CollectiveCost Ring(const UplinkLoad* load = nullptr, bool self_in_load = false) const;
  CollectiveCost Hierarchical(const UplinkLoad* load = nullptr, bool self_in_load = false) const;
  CollectiveCost Best(const UplinkLoad* load = nullptr, bool self_in_load = false) const;
  // The shared switch domains the ring leaves, with the job's GPUs under each: what it adds to
  // the UplinkLoad of the jobs running beside it.
  const UplinkLoad& uplink_use() const { return uplink_use_; }

 private:
  friend class NetworkModel;
  // A domain the ring leaves: its capacity for the job over the ring edges leaving it.
  struct Link {
    int domain = -1;
    bool shared = false;  // a switch's uplinks, shared with other jobs (contention)
    long gpus = 0;        // the job's GPUs under it
    long self = 0;        // what the job adds to the domain's load (uplink_use)
    double own = 0;       // the job's NICs under it, GB/s
    double fixed = 0;     // fully loaded share: own / oversubscription
    double total = 0;     // all of the domain's uplinks, GB/s
    double leaving = 0;   // ring edges leaving it
  };
  struct Algo {
    std::vector<Link> links;
    long n = 0;          // GPUs
    size_t units = 0;    // ring units (nodes or NVLink domains)
    double nvlink = 0;   // ring: slowest NVLink used (infinity when none)
    double intra_s = 0;  // hierarchical: the NVLink phases
    double bytes = 0;
  };
  // The slowest link over `others`, and where (a string only for the winner).
  double Bottleneck(const Algo& a, const UplinkLoad* load, bool self_in_load,
                    std::string* where) const;

  const Cluster* c_ = nullptr;
  Algo ring_, hier_;
  UplinkLoad uplink_use_;
};

class NetworkModel {
 public:
  explicit NetworkModel(const Cluster& cluster, NetworkParams params = {});

  // Ring all-reduce of `bytes` over the members' GPUs. NCCL builds one ring per channel that
  // visits each node once, nodes in the order of their first rank (members in order), GPUs of a
  // node over NVLink; the channels spread a node's crossing over all the job's NICs on it.
  // Every GPU sends 2(n-1)/n * S; the slowest link, divided among the ring edges that cross it,
  // decides: NVLink per GPU; a node's g job GPUs own g NICs; a switch domain D (leaf, spine,
  // island) gives the g_D job GPUs under it g_D NICs' worth of uplink divided by the
  // oversubscription above D, shared by the ring edges leaving D.
  // With `others`, the uplinks of a switch domain D (G_D GPUs under it) give this job
  // G_D x NIC / oversubscription x g_D / (g_D + others[D]), at most its own g_D NICs.
  CollectiveCost RingAllReduce(std::span<const MemberPlacement> members, double bytes,
                               const UplinkLoad* others = nullptr) const;

  // Hierarchical all-reduce: reduce-scatter inside each NVLink domain (node or NVL72 rack),
  // a ring all-reduce of S among the domains (each using its job GPUs' NICs), all-gather back.
  // Phases run one after the other.
  CollectiveCost HierarchicalAllReduce(std::span<const MemberPlacement> members, double bytes,
                                       const UplinkLoad* others = nullptr) const;

  // The faster of the two, as NCCL's tuner would pick for large messages.
  CollectiveCost AllReduce(std::span<const MemberPlacement> members, double bytes,
                           const UplinkLoad* others = nullptr) const;

  // The three above for `bytes` on these members, priced later against any UplinkLoad.
  PreparedAllReduce Prepare(std::span<const MemberPlacement> members, double bytes) const;

  // The most compact placement of the shape on an empty cluster: members packed in node order
  // on one GPU model (`sku`, or the fastest model that holds it), so it fills nodes, then NVLink
  // domains, then leaves. Empty if none holds it.
  std::vector<MemberPlacement> CompactPlacement(int members, int gpus_per_member,
                                                int sku = kAnySku) const;

 private:
  struct Ring;
  Ring BuildRing(std::span<const MemberPlacement> members, bool per_nvlink_domain) const;
  PreparedAllReduce::Algo PrepareAlgo(const Ring& r, double bytes, bool hierarchical) const;
  double Oversubscription(int level) const;  // above a domain of level+1, i.e. at `level`

  const Cluster& c_;
  NetworkParams p_;
  std::vector<double> nvlink_;      // per SKU
  std::vector<char> nvlink_level_;  // per level
  std::vector<double> oversub_;     // per level
  int nvlink_domain_level_ = -1;    // widest NVLink tier level, -1 when none
};

}  // namespace topogang::sim
