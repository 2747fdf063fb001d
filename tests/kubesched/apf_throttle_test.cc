// The API server's priority and fairness refusing topogangd's bindings (429 with Retry-After and
// a plain-text body), end to end: the real topogangd (cluster mode) behind the kube-scheduler
// emulator and the fake API server. A gang whose bindings are partly refused still ends whole on
// the nodes it was reserved, as kube-scheduler retries the refused members after its backoff, and
// a gang that comes after it never gets those nodes.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"
#include "tests/kubesched/two_leaf_cluster.h"

namespace topogang::kubesched {
namespace {

using testing::TwoLeafLeafOf;
using testing::TwoLeafNode;

class ApfThrottleEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    for (int i = 0; i < 8; ++i) api.PutNode(TwoLeafNode(i));
    StartAll();
  }
  std::set<std::string> Nodes(const std::vector<std::string>& pods) {
    std::set<std::string> out;
    for (const std::string& p : pods) out.insert(BoundNode(p));
    return out;
  }
};

TEST_F(ApfThrottleEndToEnd, RefusedBindingsAreRetriedOntoTheGangsOwnNodes) {
  api.ThrottleBindings(3);
  const std::vector<std::string> first = PutGang("first", 4, 8);
  // Three of its bindings refused, one through: the refused members wait out their backoff.
  ASSERT_TRUE(emu->WaitFor([&] { return api.throttled_bindings() == 3; }, absl::Seconds(20)))
      << topogangd.LogTail(30);
  // Meanwhile a second gang of the same shape asks: the four nodes free are the other leaf's, and
  // the refused members' nodes are still theirs.
  const std::vector<std::string> second = PutGang("second", 4, 8);
  ASSERT_TRUE(WaitBound(first)) << topogangd.LogTail(30);
  ASSERT_TRUE(WaitBound(second)) << topogangd.LogTail(30);
  EXPECT_EQ(api.bindings().size(), 8u) << "each member bound once, after its refusals";
  int failures = 0;
  for (const std::string& p : first) failures += emu->Record("default/" + p)->bind_failures;
  EXPECT_EQ(failures, 3) << "each refusal reached kube-scheduler as a failed bind";
  const std::set<std::string> first_nodes = Nodes(first), second_nodes = Nodes(second);
  ASSERT_EQ(first_nodes.size(), 4u);
  ASSERT_EQ(second_nodes.size(), 4u);
  const std::string leaf = TwoLeafLeafOf(*first_nodes.begin());
  for (const std::string& n : first_nodes) EXPECT_EQ(TwoLeafLeafOf(n), leaf) << n;
  for (const std::string& n : second_nodes) EXPECT_NE(TwoLeafLeafOf(n), leaf) << n;
  EXPECT_NE(topogangd.Log().find("HTTP 429"), std::string::npos) << topogangd.LogTail(30);
}

}  // namespace
}  // namespace topogang::kubesched
