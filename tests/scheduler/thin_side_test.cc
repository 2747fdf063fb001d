// Thin sides (Placement::thin_level) and the queue's rule that gangs below hold_min_gpus wait
// for a placement without one (QueueOptions::avoid_thin_sides).
//
// The cluster of these tests: one spine over two leaves of four 8-GPU nodes (nodes 0-3 and 4-7),
// leaf uplinks 2:1 into the spine. By docs/network-model.md a ring leaving a leaf through the
// uplinks of k of its nodes gets k x 8 x 50 / 2 GB/s there, against the 8 x 50 GB/s of one
// node's NICs: k = 1 halves the gang's bus bandwidth (thin), k >= 2 leaves it NIC-bound.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/admission.h"
#include "scheduler/placement.h"
#include "scheduler/queue_policy.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using queue_test::Gang;
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
  ASSERT_NE(q.Find("g"), nullptr);
  EXPECT_EQ(q.Find("g")->declined,
            "waiting for a placement without a thin side: the one that fits now has 1 node in "
            "one leaf, whose uplinks are 2:1 oversubscribed, and would slow the whole gang");
  EXPECT_TRUE(q.Schedule(s, t + absl::Hours(24)).empty()) << "no time limit";
  // Node 6 frees: 2 + 2 fits, and the planner balances the split.
  ASSERT_TRUE(s.Release("busy6").ok());
  ASSERT_EQ(q.Schedule(s, t + absl::Hours(24)), std::vector<std::string>{"g"});
  EXPECT_EQ(s.Find("g")->placement.Nodes(), (std::vector<int>{0, 1, 4, 6}));
  EXPECT_EQ(s.Find("g")->placement.thin_level, -1);
}

TEST(ThinSide, TakenWhenTheRuleIsOffOrTheGangIsLargeEnoughForHolds) {
  for (const bool large : {false, true}) {
    GangScheduler s = OnlyThinFits();
    QueueOptions o = NoPatience();
    if (large) {
      o.hold_min_gpus = 32;  // the gang's size: it would get a hold, so it does not wait
    } else {
      o.avoid_thin_sides = false;
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
}

TEST(ThinSide, LocalityPatienceComesFirstThenTheThinSideStillWaits) {
  GangScheduler s = OnlyThinFits();
  GangQueue q;  // defaults: 30 minutes of patience, thin sides avoided
  const absl::Time t = absl::UnixEpoch();
  ASSERT_TRUE(q.Enqueue(Gang("g", 4, 8), t).ok());
  EXPECT_TRUE(q.Schedule(s, t).empty());
  EXPECT_EQ(q.Find("g")->declined,
            "waiting up to 30m for a better-connected placement than the one that fits now "
            "(lowest common tier: spine)");
  EXPECT_TRUE(q.Schedule(s, t + absl::Minutes(31)).empty());
  EXPECT_NE(q.Find("g")->declined.find("thin side"), std::string::npos);
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
