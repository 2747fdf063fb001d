#include "sim/comm_model.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace topogang::sim {
namespace {

TEST(CommModel, StretchFollowsTheFormula) {
  EXPECT_DOUBLE_EQ(Stretch(0.0, 400, 50), 1.0);   // no communication: no slowdown
  EXPECT_DOUBLE_EQ(Stretch(1.0, 400, 200), 2.0);  // all communication at half bandwidth
  EXPECT_DOUBLE_EQ(Stretch(0.3, 400, 400.0 / 7), 0.7 + 0.3 * 7);
  EXPECT_DOUBLE_EQ(Stretch(0.5, 400, 800), 1.0);  // never faster than the ideal
  EXPECT_DOUBLE_EQ(Stretch(0.5, 400, 0), 1.0);    // no bandwidth info: unchanged
}

TEST(CommModel, IdealLevelIsTheSmallestDomainThatHoldsTheShape) {
  // 2 zones x 2 spines x 2 leaves x 4 nodes x 8 GPUs: leaf 32, spine 64, zone 128 GPUs.
  Cluster c = testing::MakeCluster(2, 2, 2, 4, 8);
  const int node = c.node_level(), leaf = c.LevelByName("leaf"), spine = c.LevelByName("spine"),
            zone = c.LevelByName("core");
  EXPECT_EQ(IdealLevel(c, 1, 8), node);
  EXPECT_EQ(IdealLevel(c, 4, 2), node);  // 8 GPUs in members of 2 still fit one node
  EXPECT_EQ(IdealLevel(c, 4, 8), leaf);
  EXPECT_EQ(IdealLevel(c, 8, 8), spine);
  EXPECT_EQ(IdealLevel(c, 9, 8), zone);
  EXPECT_EQ(IdealLevel(c, 17, 8), 0);
  EXPECT_DOUBLE_EQ(IdealBandwidthGbps(c, 1, 8), c.SpanBandwidthGbps(node));
  EXPECT_DOUBLE_EQ(IdealBandwidthGbps(c, 17, 8), c.SpanBandwidthGbps(0));
}

}  // namespace
}  // namespace topogang::sim
