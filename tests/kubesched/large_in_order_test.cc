// Large gangs in queue order (QueueOptions::large_gangs_in_order), end to end: the real topogangd
// behind the kube-scheduler emulator. A 4 x 8 GPU gang that may only run in pool b waits for a
// busy node there (its other nodes held for it). A younger 2 x 8 gang that fits pool a now must,
// with the option on, be refused with the name of the gang it waits behind, and start only once
// the older gang has; a single-node job still backfills pool a. With the option off (the
// default) the younger gang starts at once: the same scenario shows the option is what stops it.
// With large_in_order_min_share, a younger gang below that share of the older one starts too.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;

class LargeInOrderEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override { std::tie(pool_a, pool_b) = testing::PutTwoPools(api); }
  // "Large" is 16+ GPUs here (hold_min_gpus), starved at once; kube-scheduler flushes its
  // unschedulable queue after 10 s of its time (1 s real) instead of five minutes.
  void Start(bool in_order, const std::string& more = "") {
    StartAll(absl::StrCat("starvation_threshold_seconds: 0, hold_min_gpus: 16, "
                          "large_gangs_in_order: ",
                          in_order ? "true" : "false", more),
             [](EmulatorOptions& o) { o.queue.pod_max_in_unschedulable = absl::Seconds(10); });
  }
  // b0 busy, then the older large gang of `members` x 8 GPUs restricted to pool b, refused once.
  std::vector<std::string> BlockAndQueueTheOldGang(int members) {
    api.PutPod(GangPod("block", "", 1, 8, Json{{"nodeSelector", {{"blocker", "yes"}}}}));
    EXPECT_TRUE(WaitBound({"block"})) << topogangd.LogTail(30);
    EXPECT_EQ(BoundNode("block"), "b0");
    const std::vector<std::string> big =
        PutGang("big", members, 8, Json{{"nodeSelector", {{"pool", "b"}}}});
    EXPECT_TRUE(WaitRefused("big-0")) << "the older gang's first pod was never refused";
    return big;
  }
  // Whether kube-scheduler's filter refused the pod at least once (its emulator record).
  bool WaitRefused(const std::string& pod) {
    return emu->WaitFor([&] {
      auto r = emu->Record("default/" + pod);
      return r && r->fit_errors > 0;
    });
  }
  // The younger large gang, 2 x 8 GPUs, no constraint: it fits pool a now.
  std::vector<std::string> QueueTheYoungGang() { return PutGang("young", 2, 8); }
  void YoungerLargeGangWaitsOnlyWhenInOrder(bool in_order);
  std::set<std::string> pool_a, pool_b;
};

void LargeInOrderEndToEnd::YoungerLargeGangWaitsOnlyWhenInOrder(bool in_order) {
  Start(in_order);
  const std::vector<std::string> big = BlockAndQueueTheOldGang(4);
  if (HasFailure()) return;
  const std::vector<std::string> young = QueueTheYoungGang();
  if (in_order) {
    ASSERT_TRUE(WaitRefused("young-0")) << topogangd.LogTail(30);
    const std::string why = emu->Record("default/young-0")->last_failure;
    EXPECT_NE(why.find("waiting behind gang"), std::string::npos) << why;
    EXPECT_NE(why.find("big"), std::string::npos) << why;
  } else {
    ASSERT_TRUE(WaitBound(young)) << topogangd.LogTail(30);
  }
  // A single-node job backfills pool a either way (pool b's free nodes are held).
  api.PutPod(GangPod("small", "", 1, 8));
  ASSERT_TRUE(WaitBound({"small"})) << topogangd.LogTail(30);
  EXPECT_TRUE(pool_a.count(BoundNode("small"))) << "small runs on " << BoundNode("small");
  for (const std::string& p : young) {
    EXPECT_EQ(BoundNode(p).empty(), in_order) << p << " on '" << BoundNode(p) << "'";
  }
  EXPECT_TRUE(BoundNode("big-0").empty()) << "the older gang fit before b0 freed";
  // The busy job ends: the older gang starts in pool b, whole; then the younger one.
  api.DeletePod("default", "block");
  ASSERT_TRUE(WaitBound(big)) << topogangd.LogTail(30);
  ASSERT_TRUE(WaitBound(young)) << topogangd.LogTail(30);
  std::set<std::string> nodes;
  for (const std::string& p : big) nodes.insert(BoundNode(p));
  EXPECT_EQ(nodes, pool_b);
  // Once the older gang is reserved the younger one may start: its members can bind while the
  // older gang's still are, so the order of the bindings themselves is not asserted.
}

TEST_F(LargeInOrderEndToEnd, WhenOnAYoungerLargeGangStartsOnlyAfterTheStarvedOne) {
  YoungerLargeGangWaitsOnlyWhenInOrder(true);
}

TEST_F(LargeInOrderEndToEnd, WhenOffAYoungerLargeGangStartsAtOnce) {
  YoungerLargeGangWaitsOnlyWhenInOrder(false);
}

// An older gang of 5 x 8 GPUs restricted to pool b (four nodes) could not start even on a drained
// cluster: it stops nobody, so the younger large gang starts at once with the option on.
TEST_F(LargeInOrderEndToEnd, AGangThatCouldNeverStartStopsNobody) {
  Start(true);
  BlockAndQueueTheOldGang(5);
  if (HasFailure()) return;
  const std::vector<std::string> young = QueueTheYoungGang();
  ASSERT_TRUE(WaitBound(young)) << emu->Record("default/young-0")->last_failure
                                << topogangd.LogTail(30);
  EXPECT_TRUE(BoundNode("big-0").empty());
}

// With large_in_order_min_share 0.75 the older gang (32 GPUs) stops only gangs of 24+ GPUs: the
// younger one (16) starts at once, as with the option off. Ignoring the share, the daemon would
// stop it as in the first test.
TEST_F(LargeInOrderEndToEnd, WithAMinShareAYoungerGangBelowItStartsAtOnce) {
  Start(true, ", large_in_order_min_share: 0.75");
  BlockAndQueueTheOldGang(4);
  if (HasFailure()) return;
  const std::vector<std::string> young = QueueTheYoungGang();
  ASSERT_TRUE(WaitBound(young)) << emu->Record("default/young-0")->last_failure
                                << topogangd.LogTail(30);
  EXPECT_TRUE(BoundNode("big-0").empty());
}

// With large_in_order_overload_backlog, while the waiting large gangs ask for no more than that
// share of the cluster, the starved gang also stops gangs below hold_min_gpus down to its share:
// at 0.25 of big's 32 GPUs, a single 8-GPU job waits behind it, where in the first test (no
// backlog option) it backfilled pool a at once. It starts once big has.
TEST_F(LargeInOrderEndToEnd, WhileLargeGangsDoNotOverloadASmallJobOfTheShareWaitsToo) {
  Start(true, ", large_in_order_min_share: 0.25, large_in_order_overload_backlog: 1.0");
  const std::vector<std::string> big = BlockAndQueueTheOldGang(4);
  if (HasFailure()) return;
  api.PutPod(GangPod("small", "", 1, 8));
  ASSERT_TRUE(WaitRefused("small")) << topogangd.LogTail(30);
  const std::string why = emu->Record("default/small")->last_failure;
  EXPECT_NE(why.find("waiting behind gang"), std::string::npos) << why;
  EXPECT_NE(why.find("gangs of 8+ GPUs"), std::string::npos) << why;
  EXPECT_TRUE(BoundNode("small").empty());
  api.DeletePod("default", "block");
  ASSERT_TRUE(WaitBound(big)) << topogangd.LogTail(30);
  ASSERT_TRUE(WaitBound({"small"})) << topogangd.LogTail(30);
}

}  // namespace
}  // namespace topogang::kubesched
