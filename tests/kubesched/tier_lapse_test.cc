// topogang.io/required-tier-max-wait end to end: the real topogangd (cluster mode) behind the
// kube-scheduler emulator. A 4 x 8-GPU gang that requires one leaf, on two leaves of four nodes
// with one node of each busy, is refused while the leaf binds; kube-scheduler keeps its pods in
// its unschedulable pool. Nothing happens in the cluster when the wait lapses, so kube-scheduler
// would not ask again for 5 minutes: topogangd's own queue pass (queue_pass_ms) starts the gang
// and wakes its pods (a Node annotation update), and the gang binds across the two leaves, whole.
// The same with the wait set once for the cluster (daemon.required_tier_max_wait_seconds) instead
// of on the pods.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;

constexpr char kLeaf[] = "network.topology.nvidia.com/leaf";

class TierLapseEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    for (int i = 0; i < 8; ++i) {
      Json n = topogang::testing::MakeNode(absl::StrCat("gpu-node-", i), 8,
                                           {{"network.topology.nvidia.com/spine", "spine-0"},
                                            {kLeaf, i < 4 ? "leaf-0" : "leaf-1"},
                                            {"blocker", i % 4 == 0 ? "yes" : "no"}});
      n["status"]["allocatable"]["pods"] = "110";
      api.PutNode(n);
    }
  }
  // `pod_wait`: the pods' topogang.io/required-tier-max-wait ("" = none); `daemon_extra`: more
  // keys of topogangd's daemon section.
  void ExpectLapsesAcrossLeaves(const std::string& pod_wait, const std::string& daemon_extra);
};

void TierLapseEndToEnd::ExpectLapsesAcrossLeaves(const std::string& pod_wait,
                                                 const std::string& daemon_extra) {
  // kube-scheduler's own 5-minute flush (30 s real here) is longer than WaitBound waits.
  StartAll(absl::StrCat("queue_pass_ms: 500", daemon_extra));
  // One 8-GPU job on node 0 and one on node 4: three free nodes per leaf.
  for (const char* b : {"block-a", "block-b"}) {
    api.PutPod(GangPod(b, "", 1, 8, Json{{"nodeSelector", {{"blocker", "yes"}}}}));
  }
  ASSERT_TRUE(WaitBound({"block-a", "block-b"})) << topogangd.LogTail(30);
  ASSERT_NE(BoundNode("block-a"), BoundNode("block-b"));
  const absl::Time created = absl::Now();
  for (int m = 0; m < 4; ++m) {
    Json p = GangPod(absl::StrCat("lap-", m), "lap", 4, 8);
    p["metadata"]["annotations"]["topogang.io/required-tier"] = "leaf";
    if (!pod_wait.empty())
      p["metadata"]["annotations"]["topogang.io/required-tier-max-wait"] = pod_wait;
    api.PutPod(p);
  }
  ASSERT_TRUE(WaitBound({"lap-0", "lap-1", "lap-2", "lap-3"})) << topogangd.LogTail(30);
  EXPECT_GE(absl::Now() - created, absl::Seconds(1)) << "placed before its wait was over";
  std::set<std::string> nodes, leaves;
  for (int m = 0; m < 4; ++m) {
    const std::string n = BoundNode(absl::StrCat("lap-", m));
    nodes.insert(n);
    leaves.insert(std::stoi(n.substr(9)) < 4 ? "leaf-0" : "leaf-1");
    auto r = emu->Record(absl::StrCat("default/lap-", m));
    ASSERT_TRUE(r.has_value());
    EXPECT_GE(r->fit_errors + r->errors, m == 0 ? 1 : 0) << r->key << ": never refused";
  }
  EXPECT_EQ(nodes.size(), 4u);
  EXPECT_EQ(leaves.size(), 2u) << "across both leaves";
  EXPECT_EQ(nodes.count(BoundNode("block-a")) + nodes.count(BoundNode("block-b")), 0u);
  // Woken by topogangd, on one of the gang's nodes.
  int woken = 0;
  for (const std::string& n : nodes) {
    const Json meta = api.GetNode(n)["metadata"];
    woken += meta.contains("annotations") && meta["annotations"].contains("topogang.io/wake");
  }
  EXPECT_EQ(woken, 1);
}

TEST_F(TierLapseEndToEnd, AGangWhoseLeafNeverFreesStartsAcrossLeavesAfterItsWait) {
  ExpectLapsesAcrossLeaves("1s", "");  // topogangd's time
}

TEST_F(TierLapseEndToEnd, TheClustersWaitAppliesToAGangThatGivesNone) {
  ExpectLapsesAcrossLeaves("", ", required_tier_max_wait_seconds: {leaf: 1}");
}

}  // namespace
}  // namespace topogang::kubesched
