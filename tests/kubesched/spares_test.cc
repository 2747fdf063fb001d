// Hot spares (#13) end to end: the real topogangd (cluster mode, daemon.spares per_domain 1, one
// node labelled topogang.io/spare=true) behind the kube-scheduler emulator and the fake API
// server. Ordinary gangs and a single pod never land on a spare; when a running gang loses a node
// (it fails, its pod is deleted and the controller creates it again) the new pod lands on the
// spare of that node's leaf at once, the daemon logs it, and the metrics count the spare in use.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;

constexpr char kLeaf[] = "network.topology.nvidia.com/leaf";
constexpr char kLabelled[] = "gpu-node-3";  // leaf-0's spare, by label

std::string NodeName(int i) { return absl::StrCat("gpu-node-", i); }
std::string LeafOf(const std::string& node) {
  return std::stoi(node.substr(9)) < 4 ? "leaf-0" : "leaf-1";
}

// 8 nodes x 8 GPUs, two leaves of four; gpu-node-3 carries the spare label.
Json Node(int i) {
  std::map<std::string, std::string> labels = {{"network.topology.nvidia.com/spine", "spine-0"},
                                               {kLeaf, i < 4 ? "leaf-0" : "leaf-1"}};
  if (NodeName(i) == kLabelled) labels["topogang.io/spare"] = "true";
  Json n = topogang::testing::MakeNode(NodeName(i), 8, labels);
  n["status"]["allocatable"]["pods"] = "110";
  return n;
}

class SparesEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    for (int i = 0; i < 8; ++i) api.PutNode(Node(i));
    StartAll("spares: {tier: leaf, per_domain: 1}");
  }
};

TEST_F(SparesEndToEnd, OrdinaryWorkAvoidsSparesAndALostMemberTakesTheSpareOfItsLeaf) {
  // Two 3 x 8 gangs: with one spare per leaf each leaf has room for exactly one of them.
  std::vector<std::string> all;
  for (const std::string gang : {"a", "b"}) {
    for (int m = 0; m < 3; ++m) {
      const std::string name = absl::StrCat(gang, "-", m);
      api.PutPod(GangPod(name, gang, 3, 8));
      all.push_back(name);
    }
  }
  ASSERT_TRUE(WaitBound(all)) << topogangd.LogTail(30);
  std::map<std::string, std::set<std::string>> leaf_nodes;  // leaf -> nodes used
  std::map<std::string, std::string> gang_leaf;
  for (const std::string& p : all) {
    const std::string node = BoundNode(p);
    EXPECT_NE(node, kLabelled) << p << " is ordinary work on the labelled spare";
    leaf_nodes[LeafOf(node)].insert(node);
    gang_leaf[p.substr(0, 1)] = LeafOf(node);
  }
  ASSERT_EQ(leaf_nodes["leaf-0"].size(), 3u);
  ASSERT_EQ(leaf_nodes["leaf-1"].size(), 3u) << "one node of leaf-1 is its per-domain spare";
  ASSERT_NE(gang_leaf["a"], gang_leaf["b"]);

  // A single pod (no gang) finds no room either: the only free GPUs are the spares'.
  api.PutPod(GangPod("solo", "", 1, 1));
  ASSERT_TRUE(emu->WaitFor(
      [&] {
        auto r = emu->Record("default/solo");
        return r && r->fit_errors >= 1;
      },
      absl::Seconds(20)));
  EXPECT_EQ(BoundNode("solo"), "");

  // The gang in leaf-0 loses a node: it fails (cordoned, NotReady), its pod is deleted and the
  // controller creates a new one.
  const std::string gang = gang_leaf["a"] == "leaf-0" ? "a" : "b";
  const std::string lost_pod = gang + "-1";
  const std::string failed = BoundNode(lost_pod);
  Json broken = Node(std::stoi(failed.substr(9)));
  broken["spec"]["unschedulable"] = true;
  broken["status"]["conditions"][0]["status"] = "False";
  api.PutNode(broken);
  api.DeletePod("default", lost_pod);
  api.PutPod(GangPod(lost_pod + "r", gang, 3, 8));
  ASSERT_TRUE(WaitBound({lost_pod + "r"})) << topogangd.LogTail(30) << [&] {
    auto r = emu->Record("default/" + lost_pod + "r");
    return r ? absl::StrCat("attempts ", r->attempts, " fit ", r->fit_errors, " err ", r->errors,
                            " bind ", r->bind_attempts, "/", r->bind_failures,
                            " last: ", r->last_failure)
             : std::string("no record");
  }();
  EXPECT_EQ(BoundNode(lost_pod + "r"), kLabelled)
      << "the replacement goes to the spare next to its peers";
  EXPECT_NE(topogangd.Log().find(
                absl::StrCat("spare node ", kLabelled, " replaced node ", failed, " for gang")),
            std::string::npos)
      << topogangd.LogTail(30);
  // The node and pod events since moved the single pod back to the queue: tried again, still
  // not placed (leaf-1's spare is idle, and the failed node is cordoned).
  EXPECT_TRUE(emu->WaitFor(
      [&] {
        auto r = emu->Record("default/solo");
        return r && r->fit_errors >= 2;
      },
      absl::Seconds(20)));
  EXPECT_EQ(BoundNode("solo"), "") << "the other leaf's spare still takes no ordinary work";

  // Metrics: the labelled spare is in use, leaf-1's spare idle.
  const std::string metrics = Metrics();
  EXPECT_NE(metrics.find(R"(topogang_spare_nodes{state="in_use",tier="leaf"} 1)"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(topogang_spare_nodes{state="idle",tier="leaf"} 1)"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(topogang_gang_events_total{event="spare_taken"} 1)"), std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace topogang::kubesched
