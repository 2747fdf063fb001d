// The network model on hand-made placements. All-reduces of S = 1 GB; a ring of n GPUs sends
// 2(n-1)/n * S per GPU, so t = 2(n-1)/n * S / busbw. H100: NVLink 450 GB/s per direction,
// one 400 Gb/s (50 GB/s) NIC per GPU.
#include "sim/network_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/engine.h"
#include "sim/generator.h"
#include "sim/report.h"
#include "sim/trace.h"
#include "tests/test_util.h"

namespace topogang::sim {
namespace {

constexpr double kS = 1e9;

// One spine over two leaves of 16 nodes x 8 H100; 2:1 oversubscription from leaf to spine.
Cluster TwoLeaves() {
  return testing::MakeCluster(
      1, 1, 2, 16, 8, "[H100]", 0,
      "topology:\n  preset: topograph\n  tiers:\n"
      "    - {name: spine, label: network.topology.nvidia.com/spine, oversubscription: 2}\n"
      "    - {name: leaf, label: network.topology.nvidia.com/leaf}\n");
}

// Members of `gpus` GPUs, one per listed node, taking the node's first GPUs.
std::vector<MemberPlacement> OnNodes(const Cluster& c, const std::vector<int>& nodes, int gpus) {
  std::vector<MemberPlacement> out;
  for (int n : nodes) {
    MemberPlacement m{n, {}};
    for (int g = 0; g < gpus; ++g) m.gpus.push_back(c.node(n).gpu_begin + g);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<int> Range(int begin, int end) {
  std::vector<int> v;
  for (int i = begin; i < end; ++i) v.push_back(i);
  return v;
}

TEST(NetworkModel, PublishedLinkSpeeds) {
  EXPECT_DOUBLE_EQ(NvlinkGBytesPerSec("H100"), 450);   // NVLink 4: 900 GB/s bidirectional
  EXPECT_DOUBLE_EQ(NvlinkGBytesPerSec("A100"), 300);   // NVLink 3: 600 GB/s
  EXPECT_DOUBLE_EQ(NvlinkGBytesPerSec("GB200"), 900);  // NVLink 5: 1.8 TB/s
  EXPECT_DOUBLE_EQ(NvlinkGBytesPerSec("B200"), 900);
  EXPECT_TRUE(IsNvlinkTier("nvlink", "nvidia.com/gpu.clique"));
  EXPECT_FALSE(IsNvlinkTier("leaf", "network.topology.nvidia.com/leaf"));
}

TEST(NetworkModel, OneNodeRunsAtNvlinkSpeed) {
  Cluster c = TwoLeaves();
  NetworkModel m(c);
  // 8 GPUs of one node: busbw = 450 GB/s, t = 2*7/8 * 1 GB / 450 GB/s = 3.888.. ms.
  CollectiveCost r = m.RingAllReduce(OnNodes(c, {0}, 8), kS);
  EXPECT_EQ(r.bottleneck, "nvlink");
  EXPECT_DOUBLE_EQ(r.busbw_gbytes_s, 450);
  EXPECT_NEAR(r.seconds, 2.0 * 7 / 8 / 450, 1e-12);
  // One GPU: nothing to reduce.
  EXPECT_DOUBLE_EQ(m.RingAllReduce(OnNodes(c, {0}, 1), kS).seconds, 0);
}

TEST(NetworkModel, SixteenNodesInOneLeafVersusTwoLeaves) {
  Cluster c = TwoLeaves();
  NetworkModel m(c);
  // (a) 16 members x 8 GPUs on the 16 nodes of leaf 0 (n = 128). Each node's crossing uses its
  // 8 NICs: 8 x 50 = 400 GB/s < NVLink 450. busbw 400, t = 2*127/128 / 400 = 4.9609375 ms.
  CollectiveCost one = m.RingAllReduce(OnNodes(c, Range(0, 16), 8), kS);
  EXPECT_DOUBLE_EQ(one.busbw_gbytes_s, 400);
  EXPECT_EQ(one.bottleneck.rfind("nic ", 0), 0u) << one.bottleneck;
  EXPECT_NEAR(one.seconds, 4.9609375e-3, 1e-12);

  // (b) 8 + 8 nodes over two leaves, ranks leaf by leaf. The ring leaves each leaf once; the
  // 64 job GPUs under a leaf own 64 x 50 / 2 = 1,600 GB/s of uplink at 2:1, so the node NICs
  // still decide: busbw 400, the same time as (a). The proxy would call this 200 Gb/s spine
  // traffic against 400 Gb/s in one leaf.
  std::vector<int> split = Range(0, 8);
  for (int n : Range(16, 24)) split.push_back(n);
  CollectiveCost two = m.RingAllReduce(OnNodes(c, split, 8), kS);
  EXPECT_DOUBLE_EQ(two.busbw_gbytes_s, 400);
  EXPECT_NEAR(two.seconds, one.seconds, 1e-15);

  // (c) The same 16 nodes with ranks alternating leaves (0,16,1,17,...): all 16 ring edges
  // cross, 8 leave each leaf, so each edge gets 1,600 / 8 = 200 GB/s: busbw 200, twice (a).
  std::vector<int> alternating;
  for (int i = 0; i < 8; ++i) alternating.push_back(i), alternating.push_back(16 + i);
  CollectiveCost alt = m.RingAllReduce(OnNodes(c, alternating, 8), kS);
  EXPECT_DOUBLE_EQ(alt.busbw_gbytes_s, 200);
  EXPECT_EQ(alt.bottleneck.rfind("uplink ", 0), 0u) << alt.bottleneck;
  EXPECT_NEAR(alt.seconds, 2 * one.seconds, 1e-12);

  // (d) Lopsided: 15 nodes in leaf 0, 1 in leaf 1. The lone node's leaf gives its 8 GPUs
  // 8 x 50 / 2 = 200 GB/s of uplink for the one edge leaving it: busbw 200.
  std::vector<int> lopsided = Range(0, 15);
  lopsided.push_back(16);
  CollectiveCost lop = m.RingAllReduce(OnNodes(c, lopsided, 8), kS);
  EXPECT_DOUBLE_EQ(lop.busbw_gbytes_s, 200);
  EXPECT_NE(lop.bottleneck.find("leaf1"), std::string::npos) << lop.bottleneck;
}

TEST(NetworkModel, UplinkContentionSharesALeafAmongTheJobsUsingIt) {
  Cluster c = TwoLeaves();
  NetworkModel m(c);
  // 15 + 1 nodes: the ring leaves leaf0 (120 job GPUs) and leaf1 (8); the spine holds both.
  std::vector<int> lopsided = Range(0, 15);
  lopsided.push_back(16);
  auto p = OnNodes(c, lopsided, 8);
  UplinkLoad use = m.Prepare(p, kS).uplink_use();
  ASSERT_EQ(use.size(), 2u);
  const int leaf1 = c.AncestorAt(c.NodeDomain(16), c.LevelByName("leaf"));
  const int leaf0 = c.AncestorAt(c.NodeDomain(0), c.LevelByName("leaf"));
  EXPECT_EQ(use[leaf1], 8);
  EXPECT_EQ(use[leaf0], 120);
  // leaf1's uplinks: 128 GPUs x 50 / 2 = 3,200 GB/s. Alone, this job's 8 GPUs get
  // min(own NICs 400, 3,200) = 400: busbw 400 instead of the fully loaded 200.
  UplinkLoad none;
  EXPECT_DOUBLE_EQ(m.RingAllReduce(p, kS, &none).busbw_gbytes_s, 400);
  // 56 other GPUs leaving leaf1: 3,200 x 8 / 64 = 400, still NIC-bound.
  UplinkLoad some = {{leaf1, 56}};
  EXPECT_DOUBLE_EQ(m.RingAllReduce(p, kS, &some).busbw_gbytes_s, 400);
  // 120 others (the whole leaf busy): 3,200 x 8 / 128 = 200, the fully loaded share.
  UplinkLoad full = {{leaf1, 120}};
  EXPECT_DOUBLE_EQ(m.RingAllReduce(p, kS, &full).busbw_gbytes_s, 200);
  // Prepared once, re-priced as the load comes and goes (what the simulator does while a job
  // runs): the same figures each time.
  const PreparedAllReduce prepared = m.Prepare(p, kS);
  for (const UplinkLoad* load : {&none, &full, &some, &none, &full}) {
    EXPECT_DOUBLE_EQ(prepared.Ring(load).busbw_gbytes_s, load == &full ? 200 : 400);
  }
  EXPECT_DOUBLE_EQ(prepared.Ring().busbw_gbytes_s, 200);  // no load given: fully loaded
  // A job inside one leaf uses no shared uplink.
  EXPECT_TRUE(m.Prepare(OnNodes(c, Range(0, 4), 8), kS).uplink_use().empty());
}

TEST(NetworkModel, SmallMembersSpreadOverNodesAreNicBound) {
  Cluster c = TwoLeaves();
  NetworkModel m(c);
  // 4 members x 2 GPUs. On one node: NVLink, busbw 450. One per node: each node has 2 job GPUs,
  // 2 NICs = 100 GB/s: busbw 100, t = 2*7/8 / 100 = 17.5 ms, 4.5x the packed 3.89 ms.
  std::vector<MemberPlacement> packed;
  for (int k = 0; k < 4; ++k) {
    packed.push_back({0, {2 * k, 2 * k + 1}});
  }
  EXPECT_DOUBLE_EQ(m.RingAllReduce(packed, kS).busbw_gbytes_s, 450);
  CollectiveCost spread = m.RingAllReduce(OnNodes(c, {0, 1, 2, 3}, 2), kS);
  EXPECT_DOUBLE_EQ(spread.busbw_gbytes_s, 100);
  EXPECT_NEAR(spread.seconds, 17.5e-3, 1e-12);
  // Ring visits each node once (NCCL's rings are per node): members 0,1 and 2,3 interleaved
  // over two nodes cost the same as grouped.
  std::vector<MemberPlacement> inter = OnNodes(c, {0, 1, 0, 1}, 2);
  inter[2].gpus = {c.node(0).gpu_begin + 2, c.node(0).gpu_begin + 3};
  inter[3].gpus = {c.node(1).gpu_begin + 2, c.node(1).gpu_begin + 3};
  std::vector<MemberPlacement> grouped = {inter[0], inter[2], inter[1], inter[3]};
  EXPECT_DOUBLE_EQ(m.RingAllReduce(inter, kS).seconds, m.RingAllReduce(grouped, kS).seconds);
}

TEST(NetworkModel, HierarchicalIsSlowerForLargeMessagesAndAllReducePicksTheRing) {
  Cluster c = TwoLeaves();
  NetworkModel m(c);
  // 2 nodes x 8 GPUs. Ring: 2*15/16 / 400 = 4.6875 ms. Hierarchical: reduce-scatter and
  // all-gather in each node 2 * 7/8 / 450 = 3.888.. ms, plus a ring of 2 nodes over 8 NICs
  // 2 * 1/2 / 400 = 2.5 ms: 6.388.. ms.
  auto p = OnNodes(c, {0, 1}, 8);
  EXPECT_NEAR(m.RingAllReduce(p, kS).seconds, 4.6875e-3, 1e-12);
  EXPECT_NEAR(m.HierarchicalAllReduce(p, kS).seconds, 2.0 * 7 / 8 / 450 + 2.5e-3, 1e-12);
  EXPECT_DOUBLE_EQ(m.AllReduce(p, kS).seconds, 4.6875e-3);
}

TEST(NetworkModel, CoreOversubscriptionBetweenIslands) {
  // meta-16k's shape in small: two islands at 7:1, non-blocking inside.
  Cluster c = testing::MakeCluster(2, 1, 1, 4, 8, "[H100]", 0,
                                   "topology: {preset: topograph, cluster_oversubscription: 7}\n");
  NetworkModel m(c);
  // 2 nodes in one island: NIC-bound, 400. One node per island: the island holds 8 job GPUs,
  // 8 x 50 / 7 = 57.14 GB/s of core uplink for one leaving edge.
  EXPECT_DOUBLE_EQ(m.RingAllReduce(OnNodes(c, {0, 1}, 8), kS).busbw_gbytes_s, 400);
  EXPECT_NEAR(m.RingAllReduce(OnNodes(c, {0, 4}, 8), kS).busbw_gbytes_s, 400.0 / 7, 1e-9);
  // 4 + 4 nodes across islands: 32 GPUs per island, 32 x 50 / 7 = 228.6 GB/s: still the core.
  std::vector<int> both = Range(0, 8);
  EXPECT_NEAR(m.RingAllReduce(OnNodes(c, both, 8), kS).busbw_gbytes_s, 1600.0 / 7, 1e-9);
}

TEST(NetworkModel, NvlinkDomainsSpanNodes) {
  // GB200: 4 trays of 4 GPUs, NVLink domains of 2 trays.
  Cluster c = testing::MakeCluster(1, 1, 1, 4, 4, "[GB200]", 2);
  NetworkModel m(c);
  // Two trays of one NVL domain: NVLink 5, 900 GB/s. Across domains: 4 NICs, 200 GB/s.
  EXPECT_DOUBLE_EQ(m.RingAllReduce(OnNodes(c, {0, 1}, 4), kS).busbw_gbytes_s, 900);
  EXPECT_DOUBLE_EQ(m.RingAllReduce(OnNodes(c, {1, 2}, 4), kS).busbw_gbytes_s, 200);
  // Hierarchical over the two domains: 2*7/8 / 900 in-domain + 2*1/2 / (8 NICs = 400).
  EXPECT_NEAR(m.HierarchicalAllReduce(OnNodes(c, {0, 1, 2, 3}, 4), kS).seconds,
              2.0 * 7 / 8 / 900 + 1.0 / 400, 1e-12);
}

TEST(NetworkModel, MixedGenerations) {
  Cluster c = testing::MakeCluster(1, 1, 2, 2, 8, "[H100, A100]");
  NetworkModel m(c);
  int a100 = -1;
  for (int n = 0; n < c.num_nodes(); ++n) {
    if (c.SkuName(c.node(n).sku) == "A100") a100 = n;
  }
  ASSERT_GE(a100, 0);
  EXPECT_DOUBLE_EQ(m.RingAllReduce(OnNodes(c, {a100}, 8), kS).busbw_gbytes_s, 300);
}

TEST(NetworkModel, CompactPlacementPacksNodesInOrder) {
  Cluster c = TwoLeaves();
  NetworkModel m(c);
  auto p = m.CompactPlacement(4, 2);  // one node
  ASSERT_EQ(p.size(), 4u);
  for (const MemberPlacement& mp : p) EXPECT_EQ(mp.node, 0);
  auto q = m.CompactPlacement(16, 8);  // leaf 0
  ASSERT_EQ(q.size(), 16u);
  EXPECT_DOUBLE_EQ(m.AllReduce(q, kS).busbw_gbytes_s, 400);
  EXPECT_TRUE(m.CompactPlacement(33, 8).empty());  // larger than the cluster
}

TEST(NetworkModelEngine, DurationsFollowTheNetworkModel) {
  // One leaf of 2 nodes x 8 H100. x (2 x 6 GPUs) must take both nodes; its compact placement
  // does too (one 6-GPU member per node), so x runs at its ideal: busbw min(450, 6 x 50) = 300
  // both ways, stretch 1, ends at 100. y (2 x 2 GPUs) arrives at 1 and finds 2 free GPUs per
  // node: one member per node. Its ring (n = 4) is NIC-bound, 2 NICs = 100 GB/s:
  // 2*3/4 / 100 = 15 ms; hierarchical is faster here: 2*1/2 / 450 in each node plus a ring of 2
  // nodes 2*1/2 / 100 = 12.22 ms. Compact (one node, NVLink): 2*3/4 / 450 = 3.33 ms. Ratio 11/3,
  // so with f = 0.5 it runs 0.5 + 0.5 * 11/3 = 7/3 times longer: ends at 1 + 700/3.
  auto t = ParseTraceCsv(
      "id,arrival_s,members,gpus_per_member,duration_s,comm_fraction,required_tier,"
      "preferred_tier\nx,0,2,6,100,0.5,,\ny,1,2,2,100,0.5,,\n",
      "net.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  Cluster c = testing::MakeCluster(1, 1, 1, 2, 8);
  SimOptions opt;
  opt.comm_model = CommModel::kNetwork;
  opt.locality_patience_s = 0;  // start y split at once (by default it waits for one node)
  auto r = Simulate(c, *t, "topogang", opt);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->jobs[0].stretch, 1);
  EXPECT_DOUBLE_EQ(r->jobs[0].end, 100);
  EXPECT_DOUBLE_EQ(r->jobs[0].bandwidth, 300 * 8);  // Gb/s
  EXPECT_NEAR(r->jobs[1].stretch, 7.0 / 3, 1e-12);
  EXPECT_NEAR(r->jobs[1].end, 1 + 700.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(r->jobs[1].ideal_bandwidth, 450 * 8);
  // The proxy prices y's split at 400 Gb/s against 7,200 on one node: 0.5 + 0.5 * 18 = 9.5.
  SimOptions proxy;
  proxy.comm_model = CommModel::kProxy;
  proxy.locality_patience_s = 0;
  auto p = Simulate(c, *t, "topogang", proxy);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->jobs[1].stretch, 9.5);
  // The network model is the default.
  SimOptions defaults;
  defaults.locality_patience_s = 0;
  auto d = Simulate(c, *t, "topogang", defaults);
  ASSERT_TRUE(d.ok());
  EXPECT_NEAR(d->jobs[1].stretch, 7.0 / 3, 1e-12);
  // With the default locality patience, y waits for x to end and runs on one node instead.
  auto patient = Simulate(c, *t, "topogang", SimOptions{});
  ASSERT_TRUE(patient.ok());
  EXPECT_DOUBLE_EQ(patient->jobs[1].start, 100);
  EXPECT_DOUBLE_EQ(patient->jobs[1].stretch, 1);
}

TEST(NetworkModelEngine, UplinkContentionChangesARunningJobsSpeed) {
  // Two leaves of 2 nodes x 8 H100 with 4:1 above the leaves: a leaf's uplinks carry
  // 16 x 50 / 4 = 200 GB/s. The second node of each leaf is drained, so every gang of two
  // members runs on node 0 (leaf 0) and node 2 (leaf 1) and its ring crosses both leaves'
  // uplinks. a (2 x 6 GPUs, all communication) runs alone from 0: its 6 GPUs per leaf get
  // min(200, 6 NICs = 300) = 200 against its compact placement's 300 inside one leaf. b
  // (2 x 2) arrives at 20; while it runs, a's share is 200 x 6/8 = 150 and b's 200 x 2/8 = 50.
  // When b ends a is back to 200. Durations follow the model piece by piece.
  Cluster c = testing::MakeCluster(
      1, 1, 2, 2, 8, "[H100]", 0,
      "topology:\n  preset: topograph\n  tiers:\n"
      "    - {name: spine, label: network.topology.nvidia.com/spine, oversubscription: 4}\n"
      "    - {name: leaf, label: network.topology.nvidia.com/leaf}\n");
  const int leaf = c.LevelByName("leaf");
  ASSERT_NE(c.AncestorAt(c.NodeDomain(0), leaf), c.AncestorAt(c.NodeDomain(2), leaf));
  ASSERT_EQ(c.AncestorAt(c.NodeDomain(0), leaf), c.AncestorAt(c.NodeDomain(1), leaf));
  auto t = ParseTraceCsv(absl::StrCat("id,arrival_s,members,gpus_per_member,duration_s,"
                                      "comm_fraction,required_tier,preferred_tier\n"
                                      "a,0,2,6,100,1,,\nb,20,2,2,10,1,,\n@drain,0,",
                                      c.node(1).name, "\n@drain,0,", c.node(3).name, "\n"),
                         "contention.csv");
  ASSERT_TRUE(t.ok()) << t.status();

  NetworkModel m(c);
  const auto pa = OnNodes(c, {0, 2}, 6), pb = OnNodes(c, {0, 2}, 2);
  const UplinkLoad none, by_a = m.Prepare(pa, kS).uplink_use(),
                         by_b = m.Prepare(pb, kS).uplink_use();
  ASSERT_EQ(by_a.size(), 2u);
  const double ideal_a = m.AllReduce(m.CompactPlacement(2, 6), kS).seconds;
  const double ideal_b = m.AllReduce(m.CompactPlacement(2, 2), kS).seconds;
  const double a_alone = m.AllReduce(pa, kS, &none).seconds / ideal_a;  // stretch, f = 1
  const double a_shared = m.AllReduce(pa, kS, &by_b).seconds / ideal_a;
  const double b_shared = m.AllReduce(pb, kS, &by_a).seconds / ideal_b;
  EXPECT_GT(a_alone, 1);
  EXPECT_GT(a_shared, a_alone * 1.1);  // b's start slows a down
  EXPECT_GT(b_shared, 1);
  // By hand: a's compact ring (12 GPUs, one leaf) is NIC-bound: 2 x 11/12 / 300 = 6.111 ms.
  // Split, the hierarchical all-reduce wins: 2 x 5/6 / 450 over NVLink plus 2 x 1/2 / 200 across
  // = 8.704 ms (the ring: 9.167), stretch 1.4242; with b, 3.704 + 1/150 = 10.370 ms, 1.6970.
  // b: 1.5 / 450 = 3.333 ms on one node; split, 2 x 1/2 / 450 + 1/50 = 22.22 ms, stretch 6.667.
  EXPECT_NEAR(ideal_a, 11.0 / 6 / 300, 1e-12);
  EXPECT_NEAR(a_alone, (5.0 / 3 / 450 + 1.0 / 200) / ideal_a, 1e-9);
  EXPECT_NEAR(a_shared, (5.0 / 3 / 450 + 1.0 / 150) / ideal_a, 1e-9);
  EXPECT_NEAR(b_shared, (1.0 / 450 + 1.0 / 50) / (1.5 / 450), 1e-9);

  const double b_end = 20 + 10 * b_shared;
  const double a_done = 20 / a_alone + (b_end - 20) / a_shared;  // a's work by b's end
  const double a_end = b_end + (100 - a_done) * a_alone;
  ASSERT_LT(a_done, 100);  // a is still running when b ends

  SimOptions opt;
  opt.uplink_contention = true;
  opt.locality_patience_s = 0;         // b starts split at once,
  opt.queue.thin_side_patience_s = 0;  // thin side and all (a node frees when a ends)
  for (const std::string policy : {"topogang", "kueue-tas"}) {
    auto r = Simulate(c, *t, policy, opt);
    ASSERT_TRUE(r.ok()) << r.status();
    const JobResult &a = r->jobs[0], &b = r->jobs[1];
    EXPECT_DOUBLE_EQ(b.start, 20) << policy;
    EXPECT_NEAR(b.end, b_end, 1e-9) << policy;
    EXPECT_NEAR(b.stretch, b_shared, 1e-12) << policy;
    EXPECT_NEAR(a.end, a_end, 1e-9) << policy;
    // a's stretch is the time-weighted one of its run: alone, shared, alone again.
    EXPECT_NEAR(a.stretch,
                (20 * a_alone + (b_end - 20) * a_shared + (a_end - b_end) * a_alone) / a_end, 1e-12)
        << policy;
  }
}

TEST(NetworkModelEngine, SameSeedSameResults) {
  auto t = GenerateTrace([] {
    GeneratorOptions o;
    o.jobs = 300;
    o.cluster_gpus = 256;
    o.seed = 9;
    o.load = 1.2;
    return o;
  }());
  ASSERT_TRUE(t.ok());
  Cluster c = testing::MakeCluster(2, 2, 2, 4, 8);
  SimOptions opt;
  opt.comm_model = CommModel::kNetwork;
  opt.failure_rate_per_node_day = 2;
  opt.seed = 17;
  for (bool contention : {false, true}) {
    opt.uplink_contention = contention;
    for (const std::string& policy : PolicyNames()) {
      auto a = Simulate(c, *t, policy, opt), b = Simulate(c, *t, policy, opt);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(JobsCsv(*a, c), JobsCsv(*b, c)) << policy << " " << contention;
      for (const JobResult& j : a->jobs) EXPECT_GE(j.stretch, 1) << policy << " " << j.id;
    }
  }
}

}  // namespace
}  // namespace topogang::sim
