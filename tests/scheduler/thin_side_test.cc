// Thin sides (Placement::thin_level) and the queue's rule that gangs below hold_min_gpus wait
// for a placement without one (QueueOptions::thin_side_patience).
//
// The cluster of these tests: one spine over two leaves of four 8-GPU nodes (nodes 0-3 and 4-7),
// leaf uplinks 2:1 into the spine. By docs/network-model.md a ring leaving a leaf through the
// uplinks of k of its nodes gets k x 8 x 50 / 2 GB/s there, against the 8 x 50 GB/s of one
// node's NICs: k = 1 halves the gang's bus bandwidth (thin), k >= 2 leaves it NIC-bound.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/placement.h"
#include "scheduler/queue_admission.h"
#include "scheduler/queue_policy.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using queue_test::Gang;
using queue_test::HeldNodes;
using queue_test::HoldAtOnce;
using queue_test::RunOn;
using testing::MakeCluster;

constexpr char kTwoToOneLeaves[] =
    "topology: {preset: topograph, tiers: ["
    "{name: spine, label: network.topology.nvidia.com/spine, bandwidth_gbps: 400, "
    "oversubscription: 2},"
    "{name: leaf, label: network.topology.nvidia.com/leaf, bandwidth_gbps: 400}]}\n";

Cluster TwoLeaves(int nodes_per_leaf = 4) {
  return MakeCluster(1, 1, 2, nodes_per_leaf, 8, "[H100]", 0, kTwoToOneLeaves);
}

Placement OnNodes(const Cluster& c, const std::vector<int>& nodes) {
  Placement p;
  for (int n : nodes) p.members.push_back({n, {c.node(n).gpu_begin}});
  SummarizePlacement(c, &p);
  return p;
}

TEST(ThinSide, OneNodeAcrossTwoToOneUplinksIsThinTwoAreNot) {
  const Cluster c = TwoLeaves();
  const int leaf = c.LevelByName("leaf");
  const Placement lone = OnNodes(c, {0, 1, 2, 4});  // 3 + 1
  EXPECT_EQ(lone.level, c.LevelByName("spine"));
  EXPECT_EQ(lone.thin_level, leaf);
  EXPECT_EQ(lone.thin_nodes, 1);
  const Placement even = OnNodes(c, {0, 1, 4, 5});  // 2 + 2: the span bandwidth is the same
  EXPECT_EQ(even.bandwidth_gbps, lone.bandwidth_gbps);
  EXPECT_EQ(even.thin_level, -1);
  EXPECT_EQ(OnNodes(c, {0, 1, 2, 3}).thin_level, -1);  // one leaf: its ring never leaves it
  EXPECT_EQ(OnNodes(c, {5}).thin_level, -1);
}

// GPUs [gpu_begin, gpu_begin + k) of each (node, k).
Placement WithGpus(const Cluster& c, const std::vector<std::pair<int, int>>& nodes) {
  Placement p;
  for (auto [n, k] : nodes) {
    MemberPlacement m{n, {}};
    for (int i = 0; i < k; ++i) m.gpus.push_back(c.node(n).gpu_begin + i);
    p.members.push_back(m);
  }
  SummarizePlacement(c, &p);
  return p;
}

TEST(ThinSide, MeasuredAgainstTheGangsSmallestNode) {
  // The ring runs at the pace of its slowest NICs: a node with 1 of the gang's GPUs (50 GB/s).
  // Leaf 1's 4 GPUs get 4 x 50 / 2 = 100 GB/s of uplink, more than that: not thin. With 8 GPUs
  // on every node, one node behind 2:1 (8 x 50 / 2 = 200 < 400) is.
  const Cluster c = TwoLeaves();
  EXPECT_EQ(WithGpus(c, {{0, 1}, {1, 1}, {4, 4}}).thin_level, -1);
  EXPECT_EQ(WithGpus(c, {{0, 8}, {1, 8}, {4, 8}}).thin_level, c.LevelByName("leaf"));
  // Two members on one node count as that node's GPUs.
  Placement two = WithGpus(c, {{0, 8}, {4, 4}});
  two.members.push_back({4,
                         {c.node(4).gpu_begin + 4, c.node(4).gpu_begin + 5, c.node(4).gpu_begin + 6,
                          c.node(4).gpu_begin + 7}});
  SummarizePlacement(c, &two);
  // 8 + 8 GPUs, one node each side: thin like 1 + 1 full nodes (counted per member, node 4
  // would look like two 4-GPU nodes, the smallest 4 GPUs, and pass).
  EXPECT_EQ(two.thin_level, c.LevelByName("leaf"));
}

TEST(ThinSide, OnlyBelowTheSpanAndAboveTheNodes) {
  // 4:1 leaf uplinks and 2:1 NICs (the leaf tier's own oversubscription): two 1-GPU members in
  // one leaf never leave it, and a node's NICs are not a switch's uplinks.
  const Cluster c =
      MakeCluster(1, 1, 2, 4, 8, "[H100]", 0,
                  "topology: {preset: topograph, tiers: ["
                  "{name: spine, label: network.topology.nvidia.com/spine, bandwidth_gbps: 400, "
                  "oversubscription: 4},"
                  "{name: leaf, label: network.topology.nvidia.com/leaf, bandwidth_gbps: 400, "
                  "oversubscription: 2}]}\n");
  ASSERT_DOUBLE_EQ(c.UplinkOversubscription(c.node_level()), 2);
  EXPECT_EQ(OnNodes(c, {0, 1}).thin_level, -1);
  EXPECT_EQ(OnNodes(c, {0, 1, 2, 3, 4, 5, 6, 7}).thin_level, -1);
  EXPECT_EQ(OnNodes(c, {0, 1, 2, 4}).thin_level, c.LevelByName("leaf"));
}

TEST(ThinSide, NotFlaggedOnNonBlockingUplinks) {
  const Cluster flat = MakeCluster(1, 1, 2, 4, 8);
  EXPECT_EQ(OnNodes(flat, {0, 1, 2, 4}).thin_level, -1);
}

// Nodes 3 and 5-7 busy: a 4-node gang fits only as 3 + 1 (nodes 0-2 and 4).
GangScheduler OnlyThinFits() {
  GangScheduler s(TwoLeaves());
  for (int n : {3, 5, 6, 7}) RunOn(s, "busy" + std::to_string(n), n, 0, 8);
  return s;
}

// Why the queue keeps `gang` waiting ("" when it is not waiting or simply does not fit).
std::string Declined(const GangQueue& q, const std::string& gang) {
  const GangQueue::Entry* e = q.Find(gang);
  return e == nullptr ? "" : e->declined;
}

QueueOptions NoPatience() {
  QueueOptions o;
  o.locality_patience = absl::ZeroDuration();
  return o;
}

TEST(ThinSide, AGangBelowHoldMinWaitsForAnEvenSplitAndSaysWhy) {
  GangScheduler s = OnlyThinFits();
  GangQueue q(NoPatience());
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(Gang("g", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(s.Find("g"), nullptr) << "nothing reserved while it waits";
  EXPECT_EQ(Declined(q, "g"),
            "waiting up to 6h for a placement without a thin side: the one that fits now has 1 "
            "node in one leaf, whose uplinks are 2:1 oversubscribed, and would slow the whole "
            "gang");
  EXPECT_EQ(q.NextDeadline(t), t + absl::Hours(6)) << "when its patience runs out";
  EXPECT_TRUE(q.Schedule(s, t + absl::Hours(5)).empty());
  // Node 6 frees: 2 + 2 fits, and the planner balances the split.
  ASSERT_TRUE(s.Release("busy6").ok());
  ASSERT_EQ(q.Schedule(s, t + absl::Hours(5)), std::vector<std::string>{"g"});
  EXPECT_EQ(s.Find("g")->placement.Nodes(), (std::vector<int>{0, 1, 4, 6}));
  EXPECT_EQ(s.Find("g")->placement.thin_level, -1);
}

TEST(ThinSide, AfterItsPatienceTheGangTakesTheThinPlacement) {
  GangScheduler s = OnlyThinFits();
  GangQueue q(NoPatience());
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(Gang("g", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_TRUE(q.Schedule(s, t + absl::Hours(6) - absl::Seconds(1)).empty());
  ASSERT_EQ(q.Schedule(s, t + absl::Hours(6)), std::vector<std::string>{"g"});
  EXPECT_EQ(s.Find("g")->placement.thin_nodes, 1);
}

TEST(ThinSide, WaitsForParts) {
  // Nodes 5-7 busy, a 5-node gang: it fits only as 4 + 1. No leaf of four nodes will ever hold
  // it whole, but 3 + 2 (parts of at least two nodes behind 2:1) will come: it waits for that.
  GangScheduler s(TwoLeaves());
  for (int n : {5, 6, 7}) RunOn(s, "busy" + std::to_string(n), n, 0, 8);
  GangQueue q(NoPatience());
  ASSERT_TRUE(q.Enqueue(Gang("g", 5, 8), absl::UnixEpoch()).ok());
  EXPECT_TRUE(q.Schedule(s, absl::UnixEpoch()).empty());
  EXPECT_NE(Declined(q, "g").find("thin side"), std::string::npos);
  ASSERT_TRUE(s.Release("busy5").ok());
  ASSERT_EQ(q.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{"g"});
  EXPECT_EQ(s.Find("g")->placement.thin_level, -1);
}

TEST(ThinSide, ExcludedNodesDoNotCountAsRoomToWaitFor) {
  // An empty cluster, but the gang's pods may not go on nodes 3 and 5-7 (kube-scheduler's own
  // filters): 3 + 1 is all it can ever get there, so it starts at once.
  GangScheduler s(TwoLeaves());
  GangQueue q(NoPatience());
  ASSERT_TRUE(q.Enqueue(Gang("g", 4, 8), absl::UnixEpoch()).ok());
  const auto exclude = [](const GangSpec&) { return std::vector<int>{3, 5, 6, 7}; };
  ASSERT_EQ(q.Schedule(s, absl::UnixEpoch(), exclude), std::vector<std::string>{"g"});
  EXPECT_EQ(s.Find("g")->placement.Nodes(), (std::vector<int>{0, 1, 2, 4}));
}

TEST(ThinSide, GpusBorrowedFromAHoldAreHeldAgainWhenTheBorrowerWaits) {
  // "big" (6 nodes, large enough for holds) holds the free nodes 0-2 and 4; its claim is
  // estimated whole in 2 h. "g" (4 nodes, limit 1 h) may run on held GPUs meanwhile, but there
  // only as 3 + 1: it waits, and the hold must keep every GPU it lent for the plan.
  GangScheduler s(TwoLeaves());
  RunOn(s, "r3", 3, 0, 8, absl::Hours(2));
  RunOn(s, "r5", 5, 0, 8, absl::Hours(2));
  RunOn(s, "r6", 6, 0, 8, absl::Hours(3));
  RunOn(s, "r7", 7, 0, 8, absl::Hours(3));
  QueueOptions o = HoldAtOnce();
  o.hold_min_gpus = 40;
  o.locality_patience = absl::ZeroDuration();
  o.claim_order = ClaimOrder::kSoonestFree;
  GangQueue q(o);
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(Gang("big", 6, 8), t).ok());
  GangSpec g = Gang("g", 4, 8);
  g.runtime_limit = absl::Hours(1);
  ASSERT_TRUE(q.Enqueue(g, t + absl::Seconds(1)).ok());
  EXPECT_TRUE(q.Schedule(s, t + absl::Seconds(5)).empty());
  EXPECT_NE(Declined(q, "g").find("thin side"), std::string::npos);
  EXPECT_EQ(HeldNodes(s, "big"), (std::vector<int>{0, 1, 2, 4}));
  EXPECT_TRUE(s.CheckInvariants().ok()) << s.CheckInvariants();
}

TEST(ThinSide, TakenWhenTheRuleIsOffOrTheGangIsLargeEnoughForHolds) {
  for (const bool large : {false, true}) {
    GangScheduler s = OnlyThinFits();
    QueueOptions o = NoPatience();
    if (large) {
      o.hold_min_gpus = 32;  // the gang's size: it would get a hold, so it does not wait
    } else {
      o.thin_side_patience = absl::ZeroDuration();
    }
    GangQueue q(o);
    ASSERT_TRUE(q.Enqueue(Gang("g", 4, 8), absl::UnixEpoch()).ok());
    ASSERT_EQ(q.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{"g"}) << large;
    EXPECT_EQ(s.Find("g")->placement.thin_nodes, 1);
  }
}

TEST(ThinSide, AGangThatCanOnlyBeThinStartsAtOnce) {
  // Leaves of two nodes, the second of each cordoned (drained): a 2-node gang can only run as
  // 1 + 1, thin, and no leaf will ever hold it whole, so it must not wait for better.
  GangScheduler s(TwoLeaves(2));
  s.SetNodeCordoned(1, true, absl::UnixEpoch());
  s.SetNodeCordoned(3, true, absl::UnixEpoch());
  GangQueue q(NoPatience());
  ASSERT_TRUE(q.Enqueue(Gang("g", 2, 8), absl::UnixEpoch()).ok());
  ASSERT_EQ(q.Schedule(s, absl::UnixEpoch()), std::vector<std::string>{"g"});
  EXPECT_EQ(s.Find("g")->placement.Nodes(), (std::vector<int>{0, 2}));
  EXPECT_EQ(s.Find("g")->placement.thin_nodes, 1);
  // Uncordoned, a leaf could hold the next such gang whole: that one waits for it.
  s.SetNodeCordoned(3, false, absl::UnixEpoch());
  RunOn(s, "busy", 3, 0, 8);
  ASSERT_TRUE(s.Release("g").ok());
  ASSERT_TRUE(q.Enqueue(Gang("h", 2, 8), absl::UnixEpoch()).ok());
  EXPECT_TRUE(q.Schedule(s, absl::UnixEpoch()).empty());
  EXPECT_NE(Declined(q, "h").find("thin side"), std::string::npos);
}

TEST(ThinSide, LocalityPatienceComesFirstThenTheThinSideStillWaits) {
  GangScheduler s = OnlyThinFits();
  GangQueue q;  // defaults: 30 minutes of patience, thin sides avoided
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(Gang("g", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(Declined(q, "g"),
            "waiting up to 30m for a better-connected placement than the one that fits now "
            "(lowest common tier: spine)");
  EXPECT_TRUE(q.Schedule(s, t + absl::Minutes(31)).empty());
  EXPECT_NE(Declined(q, "g").find("thin side"), std::string::npos);
}

TEST(ThinSide, TheDaemonsAdmissionAnswersWithTheReason) {
  GangScheduler s = OnlyThinFits();
  QueueAdmission admission(NoPatience());
  auto r = admission.Admit(s, Gang("g", 4, 8), absl::UnixEpoch(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("1 node in one leaf"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace topogang
