// GPUs held for a starved gang, end to end: the real topogangd (cluster mode) behind the
// kube-scheduler emulator, which offers a pod only the nodes that pass its own filters: never a
// node whose GPUs are all in use (NodeResourcesFit), never one its nodeSelector rejects. A 4 x 8
// GPU gang that may only run in pool b, where one node is busy, must get pool b held (the busy
// node included, though it is never offered), not the freer pool a it can never use; small jobs
// then run in pool a, and the gang starts in pool b once the busy node frees.
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

class QueueHoldEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    // Two pools of four nodes, one leaf each; node b0 is where the busy job goes.
    std::tie(pool_a, pool_b) = testing::PutTwoPools(api);
    // Gangs of 16+ GPUs that do not fit are held GPUs at once (no starvation wait: the daemon's
    // clock is not scaled). kube-scheduler flushes its unschedulable queue after 10 s of its
    // time (1 s real) instead of five minutes; nothing else about its retries changes.
    StartAll("starvation_threshold_seconds: 0, hold_min_gpus: 16",
             [](EmulatorOptions& o) { o.queue.pod_max_in_unschedulable = absl::Seconds(10); });
  }
  // The busy job on b0, then the 4 x 8 gang restricted to pool b, refused once (kube-scheduler
  // offers it b1-b3: b0 is full). Returns the gang's pods.
  std::vector<std::string> BlockAndQueueTheGang() {
    api.PutPod(GangPod("block", "", 1, 8, Json{{"nodeSelector", {{"blocker", "yes"}}}}));
    EXPECT_TRUE(WaitBound({"block"})) << topogangd.LogTail(30);
    EXPECT_EQ(BoundNode("block"), "b0");
    const std::vector<std::string> big =
        PutGang("big", 4, 8, Json{{"nodeSelector", {{"pool", "b"}}}});
    EXPECT_TRUE(emu->WaitFor([&] {
      auto r = emu->Record("default/big-0");
      return r && r->fit_errors > 0;
    })) << "the gang's first pod was never refused";
    return big;
  }
  std::set<std::string> pool_a, pool_b;
};

TEST_F(QueueHoldEndToEnd, AGangWithANodeSelectorIsHeldGpusOnlyWhereItMayRun) {
  const std::vector<std::string> big = BlockAndQueueTheGang();
  if (HasFailure()) return;
  // Four single-node jobs with no constraint: pool b's free nodes are held for the gang, so all
  // four run in pool a.
  const std::vector<std::string> small = PutGang("", 4, 8, Json::object(), "small");
  ASSERT_TRUE(WaitBound(small)) << topogangd.LogTail(30);
  for (const std::string& p : small) {
    EXPECT_TRUE(pool_a.count(BoundNode(p))) << p << " runs on " << BoundNode(p);
  }
  EXPECT_TRUE(BoundNode("big-0").empty()) << "the gang fit before b0 freed";
  // The busy job ends: the gang starts in pool b, whole.
  api.DeletePod("default", "block");
  ASSERT_TRUE(WaitBound(big)) << topogangd.LogTail(30);
  std::set<std::string> nodes;
  for (const std::string& p : big) nodes.insert(BoundNode(p));
  EXPECT_EQ(nodes, pool_b);
}

// Another scheduler binds a pod onto a node whose GPUs the queue holds for the gang (to
// kube-scheduler they are free: no pod requests them). topogangd adopts the pod on those GPUs
// (the hold yields) rather than failing to and keeping them held for the gang as if free; the
// gang waits while the pod runs (kube-scheduler no longer offers that node) and starts once the
// pod is gone.
TEST_F(QueueHoldEndToEnd, APodOfAnotherSchedulerOnHeldGpusIsAdoptedAndTheGangWaitsForIt) {
  const std::vector<std::string> big = BlockAndQueueTheGang();
  if (HasFailure()) return;
  // Bound by another scheduler onto b1, held for the gang.
  Json foreign = GangPod("foreign", "", 1, 8, Json{{"nodeName", "b1"}}, "default-scheduler");
  foreign["status"]["phase"] = "Running";
  api.PutPod(foreign);
  // The busy job ends (after the pod above, so both watches see that pod first). The gang's pods
  // are retried (a pod deletion may make room) and refused: pool b has three free nodes for four
  // members.
  const int refused = emu->Record("default/big-0")->fit_errors;
  api.DeletePod("default", "block");
  ASSERT_TRUE(emu->WaitFor([&] {
    auto r = emu->Record("default/big-0");
    return r && (r->fit_errors > refused || !r->node_name.empty());
  })) << topogangd.LogTail(30);
  for (const std::string& p : big) {
    EXPECT_EQ(BoundNode(p), "") << p << " was bound while b1 ran another scheduler's pod";
  }
  EXPECT_EQ(topogangd.Log().find("adopt-failed"), std::string::npos) << topogangd.LogTail(30);
  // The other pod ends: the gang starts in pool b, whole.
  api.DeletePod("default", "foreign");
  ASSERT_TRUE(WaitBound(big)) << topogangd.LogTail(30);
  std::set<std::string> nodes;
  for (const std::string& p : big) nodes.insert(BoundNode(p));
  EXPECT_EQ(nodes, pool_b);
}

}  // namespace
}  // namespace topogang::kubesched
