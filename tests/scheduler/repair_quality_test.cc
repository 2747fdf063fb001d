// AssessRepair (and AssessPlacements) on hand-made placements: which repairs leave a running gang
// slower than it ran.
#include "scheduler/repair_quality.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace topogang {
namespace {

using ::testing::HasSubstr;
using testing::MakeCluster;
using testing::MakeNvlCluster;

// All GPUs of each node, one member per node.
Placement Whole(const Cluster& c, const std::vector<int>& nodes) {
  Placement p;
  for (int n : nodes) {
    MemberPlacement m{n, {}};
    for (int i = 0; i < c.node(n).gpus; ++i) m.gpus.push_back(c.node(n).gpu_begin + i);
    p.members.push_back(std::move(m));
  }
  return p;
}

MemberPlacement On(const Cluster& c, int n) { return Whole(c, {n}).members[0]; }

// MakeNvlCluster(3): racks of 4 trays x 4 GPUs, node n in rack n / 4 and leaf n / 8. A gang of
// 8 trays in racks 0 and 1 (4 + 4 = 16 GPUs each) loses tray 3.
TEST(RepairQuality, AReplacementAloneInAnotherRackIsSlower) {
  const Cluster c = MakeNvlCluster(3);
  const Placement before = Whole(c, {0, 1, 2, 3, 4, 5, 6, 7});
  // Tray 16 is in rack 4 (leaf 2): 4 of the gang's GPUs there against 16 in each rack before,
  // so that tray's 4 NICs carry the ring between racks for everybody.
  const RepairAssessment lone = AssessRepair(c, before, {3}, {On(c, 16)});
  EXPECT_TRUE(lone.lone_in_nvlink_domain());
  EXPECT_EQ(lone.fewest_per_nvlink_before, 16);
  EXPECT_EQ(lone.fewest_per_nvlink_after, 4);
  EXPECT_TRUE(lone.Degraded());
  EXPECT_THAT(lone.Why(c), HasSubstr("only 4 of the gang's GPUs in its"));
  EXPECT_THAT(lone.Why(c), HasSubstr("the fewest in one was 16"));
}

// Two placements compared directly, as a later repair is judged against where the gang ran
// before an earlier one: tray 3 went to rack 4 (16 -> 4), then came home to tray 3's rack.
TEST(RepairQuality, APlacementIsJudgedAgainstAnyEarlierOne) {
  const Cluster c = MakeNvlCluster(3);
  const Placement first = Whole(c, {0, 1, 2, 3, 4, 5, 6, 7});
  const Placement away = Whole(c, {0, 1, 2, 16, 4, 5, 6, 7});
  const Placement home = Whole(c, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_TRUE(AssessPlacements(c, first, away).lone_in_nvlink_domain());
  EXPECT_EQ(AssessPlacements(c, first, away).fewest_per_nvlink_after, 4);
  EXPECT_FALSE(AssessPlacements(c, first, home).Degraded());
  // Another tray of rack 4 is still alone there.
  EXPECT_TRUE(AssessPlacements(c, first, Whole(c, {0, 1, 2, 17, 4, 5, 6, 7})).Degraded());
}

TEST(RepairQuality, AReplacementInTheSameRackIsNot) {
  const Cluster c = MakeNvlCluster(3);
  // The gang used 3 trays of rack 0 and all of rack 1; tray 3 (rack 0) is free and replaces
  // tray 2: still 12 + 16.
  const Placement before = Whole(c, {0, 1, 2, 4, 5, 6, 7});
  const RepairAssessment same = AssessRepair(c, before, {2}, {On(c, 3)});
  EXPECT_EQ(same.fewest_per_nvlink_before, 12);
  EXPECT_EQ(same.fewest_per_nvlink_after, 12);
  EXPECT_FALSE(same.Degraded()) << same.Why(c);
  EXPECT_EQ(same.Why(c), "");
}

TEST(RepairQuality, AGangAlreadyThatThinInOneRackHasNoNewLoneTray) {
  const Cluster c = MakeNvlCluster(3);
  // 4 GPUs in rack 0 (tray 0) and 16 in rack 1 before; the lost tray 4 goes to rack 4: the
  // fewest per rack stays 4, so the ring is paced as before.
  const Placement before = Whole(c, {0, 4, 5, 6, 7});
  const RepairAssessment r = AssessRepair(c, before, {1}, {On(c, 16)});
  EXPECT_EQ(r.fewest_per_nvlink_before, 4);
  EXPECT_EQ(r.fewest_per_nvlink_after, 4);
  EXPECT_FALSE(r.lone_in_nvlink_domain());
}

// One spine over two leaves of four 8-GPU nodes, leaf uplinks 2:1 (tests/scheduler/
// thin_side_test.cc): a ring leaving a leaf through one node's share of its uplinks runs at
// half the speed of one leaving through two.
constexpr char kTwoToOneLeaves[] =
    "topology: {preset: topograph, tiers: ["
    "{name: spine, label: network.topology.nvidia.com/spine, bandwidth_gbps: 400, "
    "oversubscription: 2},"
    "{name: leaf, label: network.topology.nvidia.com/leaf, bandwidth_gbps: 400}]}\n";

TEST(RepairQuality, AThinSideTheRepairAddsIsSlower) {
  const Cluster c = MakeCluster(1, 1, 2, 4, 8, "[H100]", 0, kTwoToOneLeaves);
  // 2 + 2 across the spine; node 5 fails and its replacement lands on node 2: 3 + 1, the same
  // span bandwidth but a thin side in leaf 1 (one node behind 2:1 uplinks).
  const RepairAssessment r = AssessRepair(c, Whole(c, {0, 1, 4, 5}), {3}, {On(c, 2)});
  EXPECT_EQ(r.bandwidth_after_gbps, r.bandwidth_before_gbps);
  EXPECT_EQ(r.thin_level_added, c.LevelByName("leaf"));
  EXPECT_EQ(r.thin_nodes, 1);
  EXPECT_TRUE(r.Degraded());
  EXPECT_THAT(r.Why(c), HasSubstr("thin side: 1 node in one leaf behind 2:1"));
  // No NVLink tier on this cluster: that check stays out of it.
  EXPECT_EQ(r.nvlink_level, -1);
  EXPECT_FALSE(r.lone_in_nvlink_domain());
}

TEST(RepairQuality, AWiderSpanIsSlower) {
  const Cluster c = MakeCluster(1, 1, 2, 4, 8, "[H100]", 0, kTwoToOneLeaves);
  // 4 nodes in leaf 0; node 3 fails and only node 4 (leaf 1) is free: the span climbs to the
  // spine, over 2:1 uplinks.
  const RepairAssessment r = AssessRepair(c, Whole(c, {0, 1, 2, 3}), {3}, {On(c, 4)});
  EXPECT_TRUE(r.slower_span());
  EXPECT_LT(r.bandwidth_after_gbps, r.bandwidth_before_gbps);
  EXPECT_TRUE(r.Degraded());
  EXPECT_THAT(r.Why(c), HasSubstr("span bandwidth drops from"));
  // Back into leaf 0 (node 3 healthy again, say): nothing lost.
  EXPECT_FALSE(AssessRepair(c, Whole(c, {0, 1, 2, 3}), {3}, {On(c, 3)}).Degraded());
}

TEST(RepairQuality, MembersOfUnknownPlaceAreLeftOut) {
  const Cluster c = MakeNvlCluster(3);
  Placement before = Whole(c, {0, 1, 2, 3, 4, 5, 6, 7});
  before.members[1].node = -1;  // released before anyone noted where
  const RepairAssessment r = AssessRepair(c, before, {3}, {On(c, 2)});
  EXPECT_EQ(r.fewest_per_nvlink_before, 12);  // rack 0 counted without member 1
  EXPECT_EQ(r.fewest_per_nvlink_after, 12);
  EXPECT_FALSE(r.Degraded());
}

}  // namespace
}  // namespace topogang
