// Keeping a starved gang's claim clear (QueueOptions::keep_claim_clear): the gangs behind it go
// elsewhere when a placement as good exists there, so the nodes it waits for drain, and start
// on those nodes anyway when they do not.
//
// The cluster of every test: one spine of three leaves of two 8-GPU nodes (leaf 0: nodes 0-1,
// leaf 1: nodes 2-3, leaf 2: nodes 4-5). Nodes 0 and 2 are cordoned, node 4 is busy and half
// of node 5, so `big`, two 8-GPU members that must share a leaf, fits no leaf now, and only leaf
// 2 ever. It is starved at once but never ready to hold (the readiness rule asks for all of its
// members free), so whatever it gets comes from keeping its claim clear, not from a hold. Its
// claim: nodes 5 and 4. The 4-GPU jobs below fit node 5 best (the tightest fit).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/queue_policy.h"
#include "tests/scheduler/queue_test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

namespace qt = queue_test;

QueueOptions NeverReady(bool keep_clear) {
  QueueOptions o;
  o.starvation_threshold = absl::ZeroDuration();
  o.hold_min_gpus = 16;
  o.hold_ready_fraction = 1.01;  // never nearly ready
  o.hold_max_shortfall_share = 0;
  o.keep_claim_clear = keep_clear;
  return o;
}

GangSpec Big() {
  GangSpec g = qt::Gang("big", 2, 8);
  g.required_tier = "leaf";
  return g;
}

class KeepClaimClear : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n : {0, 2}) s_.SetNodeCordoned(n, true, t_);
    qt::RunOn(s_, "r4", 4, 0, 8);
    qt::RunOn(s_, "r5", 5, 0, 4);
  }
  // Enqueues `big` and then `small`, one pass; returns small's nodes.
  std::vector<int> BigThenSmall(GangQueue& q, const GangSpec& small) {
    EXPECT_TRUE(q.Enqueue(Big(), t_).ok());
    EXPECT_TRUE(q.Schedule(s_, t_).empty());
    EXPECT_TRUE(q.Enqueue(small, t_ + absl::Seconds(1)).ok());
    EXPECT_EQ(q.Schedule(s_, t_ + absl::Seconds(1)), (std::vector<std::string>{small.name}));
    EXPECT_TRUE(qt::HeldNodes(s_, "big").empty()) << "no hold: this is not what a hold does";
    const GangRecord* r = s_.Find(small.name);
    return r ? r->placement.Nodes() : std::vector<int>{};
  }

  GangScheduler s_{testing::MakeCluster(1, 1, 3, 2, 8)};
  const absl::Time t_ = absl::UnixEpoch();
};

TEST_F(KeepClaimClear, AGangThatFitsAsWellElsewhereLeavesTheClaimAndTheStarvedGangStartsSooner) {
  GangQueue q(NeverReady(true));
  const std::vector<int> nodes = BigThenSmall(q, qt::Gang("small", 1, 4));
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_TRUE(nodes[0] == 1 || nodes[0] == 3) << "on node " << nodes[0] << ", big's claim";
  // The jobs on leaf 2 end: it is whole again and big starts there.
  ASSERT_TRUE(s_.Release("r4").ok());
  ASSERT_TRUE(s_.Release("r5").ok());
  EXPECT_EQ(q.Schedule(s_, t_ + absl::Seconds(2)), (std::vector<std::string>{"big"}));
  EXPECT_EQ(s_.Find("big")->placement.Nodes(), (std::vector<int>{4, 5}));
  EXPECT_TRUE(s_.CheckInvariants().ok());
}

TEST_F(KeepClaimClear, WithoutItTheSameGangTakesTheClaimAndTheStarvedGangKeepsWaiting) {
  // The contrast that makes the test above mean something: the planner's own choice is big's.
  GangQueue q(NeverReady(false));
  EXPECT_EQ(BigThenSmall(q, qt::Gang("small", 1, 4)), (std::vector<int>{5}));
  ASSERT_TRUE(s_.Release("r4").ok());
  ASSERT_TRUE(s_.Release("r5").ok());
  EXPECT_TRUE(q.Schedule(s_, t_ + absl::Seconds(2)).empty());
}

TEST_F(KeepClaimClear, AGangThatFitsOnlyOnTheClaimStillStartsThere) {
  // Nothing idles for the starved gang: nodes 1 and 3 are busy too, so node 5 is the only room.
  qt::RunOn(s_, "r1", 1, 0, 8);
  qt::RunOn(s_, "r3", 3, 0, 8);
  GangQueue q(NeverReady(true));
  EXPECT_EQ(BigThenSmall(q, qt::Gang("small", 1, 4)), (std::vector<int>{5}));
}

TEST_F(KeepClaimClear, AGangThatWouldRunSlowerOffTheClaimIsPlacedOnIt) {
  // Two GPUs of node 1 and two of node 3 are free: off the claim, a 2 x 2 gang would span two
  // leaves, where node 5 holds it inside one node (NVLink). Its speed comes first.
  qt::RunOn(s_, "r1", 1, 0, 6);
  qt::RunOn(s_, "r3", 3, 0, 6);
  GangQueue q(NeverReady(true));
  EXPECT_EQ(BigThenSmall(q, qt::Gang("small", 2, 2)), (std::vector<int>{5}));
}

TEST_F(KeepClaimClear, OlderGangsAreNotSteered) {
  // A gang that arrived before the starved one comes first in the pass, before any claim is
  // known, and takes the planner's choice.
  GangQueue q(NeverReady(true));
  ASSERT_TRUE(q.Enqueue(qt::Gang("older", 1, 4), t_ - absl::Seconds(1)).ok());
  ASSERT_TRUE(q.Enqueue(Big(), t_).ok());
  EXPECT_EQ(q.Schedule(s_, t_), (std::vector<std::string>{"older"}));
  EXPECT_EQ(s_.Find("older")->placement.Nodes(), (std::vector<int>{5}));
}

}  // namespace
}  // namespace topogang
