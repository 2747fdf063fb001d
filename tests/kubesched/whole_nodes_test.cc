// Whole nodes for a gang of members smaller than a node (Planner::WholeNodes, #12), end to end:
// the real topogangd behind the kube-scheduler emulator. Leaf a has two half-used nodes and a
// free one (16 GPUs free, the tighter leaf), leaf b two free nodes and a half-used one (20). A
// gang of 4 pods x 4 GPUs goes to leaf b, two pods per free node, rather than best fit's leaf a,
// where two nodes would each carry one pod over half their NICs and pace the gang's ring.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;

class WholeNodesEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    for (const char* leaf : {"a", "b"}) {
      for (int i = 0; i < 3; ++i) testing::PutGpuNode(api, leaf + std::to_string(i), leaf);
    }
  }
  // A plain 4-GPU pod pinned to `node`, bound before the gang arrives.
  void HalfUse(const std::string& node) {
    const std::string pod = "busy-" + node;
    api.PutPod(GangPod(pod, "", 1, 4, Json{{"nodeSelector", {{"kubernetes.io/hostname", node}}}}));
    ASSERT_TRUE(WaitBound({pod})) << topogangd.LogTail(30);
    ASSERT_EQ(BoundNode(pod), node);
  }
};

TEST_F(WholeNodesEndToEnd, AGangOfHalfNodeMembersGetsWholeNodes) {
  StartAll();
  for (const char* node : {"a0", "a1", "b2"}) {
    HalfUse(node);
    if (HasFatalFailure()) return;
  }
  const std::vector<std::string> pods = PutGang("g", 4, 4);
  ASSERT_TRUE(WaitBound(pods)) << topogangd.LogTail(30);
  std::map<std::string, int> per_node;
  for (const std::string& p : pods) ++per_node[BoundNode(p)];
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"b0", 2}, {"b1", 2}}));
}

}  // namespace
}  // namespace topogang::kubesched
