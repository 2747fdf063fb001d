// Elastic gangs (#13) end to end: the real topogangd (cluster mode) behind the kube-scheduler
// emulator and the fake API server. A controller creates all eight pods of an 8 x 8-GPU gang
// labelled topogang.io/min-members=2 on a cluster with one free leaf of four nodes: the gang starts
// with its minimum, grows to fill that leaf as its other pods are retried, and does not spread
// into the other leaf when GPUs free up there; the pods it cannot use stay pending.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"
#include "tests/kubesched/two_leaf_cluster.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;
using testing::TwoLeafLeafOf;
using testing::TwoLeafNode;

class ElasticEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    for (int i = 0; i < 8; ++i) api.PutNode(TwoLeafNode(i));
    StartAll();
  }
  std::set<std::string> BoundNodes(const std::string& gang, int size) {
    std::set<std::string> out;
    for (int m = 0; m < size; ++m) {
      const std::string n = BoundNode(absl::StrCat(gang, "-", m));
      if (!n.empty()) out.insert(n);
    }
    return out;
  }
};

TEST_F(ElasticEndToEnd, StartsWithItsMinimumAndGrowsInsideItsLeafOnly) {
  // "big" (4 x 8) takes a whole leaf.
  for (int m = 0; m < 4; ++m) api.PutPod(GangPod(absl::StrCat("big-", m), "big", 4, 8));
  ASSERT_TRUE(emu->WaitFor([&] { return BoundNodes("big", 4).size() == 4; }, absl::Seconds(20)))
      << topogangd.LogTail(30);
  const std::string big_leaf = TwoLeafLeafOf(*BoundNodes("big", 4).begin());
  // "el": 8 x 8, min-members 2, all pods created at once.
  for (int m = 0; m < 8; ++m) {
    Json p = GangPod(absl::StrCat("el-", m), "el", 8, 8);
    p["metadata"]["annotations"]["topogang.io/min-members"] = "2";
    api.PutPod(p);
  }
  // It fills the free leaf: 4 members, all there.
  ASSERT_TRUE(emu->WaitFor([&] { return BoundNodes("el", 8).size() == 4; }, absl::Seconds(20)))
      << topogangd.LogTail(30);
  for (const std::string& n : BoundNodes("el", 8)) EXPECT_NE(TwoLeafLeafOf(n), big_leaf) << n;
  EXPECT_NE(topogangd.Log().find("elastic gang default/el grows to"), std::string::npos)
      << topogangd.LogTail(30);
  // "big" finishes: its leaf is free, but "el" started in the other one and does not spread.
  // Its pending pods are tried again (the deletions are cluster events) and stay pending.
  std::map<std::string, int> errors_before;
  for (int m = 0; m < 8; ++m) {
    auto r = emu->Record(absl::StrCat("default/el-", m));
    if (r && r->node_name.empty()) errors_before[r->key] = r->fit_errors;
  }
  ASSERT_EQ(errors_before.size(), 4u);
  for (int m = 0; m < 4; ++m) api.DeletePod("default", absl::StrCat("big-", m));
  ASSERT_TRUE(emu->WaitFor(
      [&] {
        for (const auto& [key, before] : errors_before) {
          auto r = emu->Record(key);
          if (!r || r->fit_errors <= before) return false;
        }
        return true;
      },
      absl::Seconds(20)))
      << "the pending members were not tried again";
  EXPECT_EQ(BoundNodes("el", 8).size(), 4u);
  for (const std::string& n : BoundNodes("el", 8)) EXPECT_NE(TwoLeafLeafOf(n), big_leaf) << n;
}

}  // namespace
}  // namespace topogang::kubesched
