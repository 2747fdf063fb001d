// Repairs that slow a gang, end to end: the real topogangd (cluster mode, preset topograph,
// whose accelerator tier is the NVLink domain) behind the kube-scheduler emulator and the fake
// API server. A gang fills both racks (NVLink domains) of one leaf; a tray fails, its pod is
// deleted and the controller creates it again. The only room is a rack of the other leaf, so
// the replacement runs there alone: the gang is repaired (it binds) and the daemon posts a
// RepairDegraded Warning event on a running member and counts the gang in
// topogang_gangs_degraded (docs/extender.md, "Repairs that slow a gang"). When the lone tray
// fails in turn and the replacement goes home, RepairRestored clears it.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;

std::string NodeName(int i) { return absl::StrCat("gpu-node-", i); }

// 12 trays of 4 GPUs in 3 racks of 4 (racks 0 and 1 in leaf-0, rack 2 in leaf-1).
Json Node(int i) {
  std::map<std::string, std::string> labels = {
      {"network.topology.nvidia.com/spine", "spine-0"},
      {"network.topology.nvidia.com/leaf", i < 8 ? "leaf-0" : "leaf-1"},
      {"network.topology.nvidia.com/accelerator", absl::StrCat("rack-", i / 4)}};
  Json n = topogang::testing::MakeNode(NodeName(i), 4, labels);
  n["status"]["allocatable"]["pods"] = "110";
  return n;
}

class RepairDegradedEndToEnd : public testing::EmulatedDaemonTest {
 protected:
  void SetUp() override {
    for (int i = 0; i < 12; ++i) api.PutNode(Node(i));
    StartAll("");
  }
  // Gang t fills leaf-0's two racks; the tray of t-3 fails and its new pod t-3r binds alone in
  // rack 2. Returns the failed tray.
  std::string DegradeOneTray() {
    std::vector<std::string> pods;
    for (int m = 0; m < 8; ++m) {
      pods.push_back(absl::StrCat("t-", m));
      api.PutPod(GangPod(pods.back(), "t", 8, 4));
    }
    EXPECT_TRUE(WaitBound(pods)) << topogangd.LogTail(30);
    for (const std::string& p : pods) {
      EXPECT_LT(std::stoi(BoundNode(p).substr(9)), 8) << p << " outside leaf-0's two racks";
    }
    const std::string failed = BoundNode("t-3");
    Fail(failed, true);
    api.DeletePod("default", "t-3");
    api.PutPod(GangPod("t-3r", "t", 8, 4));
    EXPECT_TRUE(WaitBound({"t-3r"})) << topogangd.LogTail(30);
    EXPECT_GE(std::stoi(BoundNode("t-3r").substr(9)), 8) << "the only room is rack 2";
    EXPECT_TRUE(emu->WaitFor([&] { return !Events("RepairDegraded").empty(); }, absl::Seconds(20)))
        << topogangd.LogTail(30);
    return failed;
  }
  // A tray fails (cordoned, NotReady) or comes back.
  void Fail(const std::string& node, bool failed) {
    Json n = Node(std::stoi(node.substr(9)));
    if (failed) {
      n["spec"]["unschedulable"] = true;
      n["status"]["conditions"][0]["status"] = "False";
    }
    api.PutNode(n);
  }
  std::vector<Json> Events(const std::string& reason) {
    std::vector<Json> out;
    for (const Json& e : api.events()) {
      if (e.value("reason", "") == reason) out.push_back(e);
    }
    return out;
  }
};

TEST_F(RepairDegradedEndToEnd, AReplacementAloneInAnotherRackIsRepairedAndReported) {
  DegradeOneTray();
  ASSERT_FALSE(HasFailure());
  const std::vector<Json> ev = Events("RepairDegraded");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].value("type", ""), "Warning");
  const std::string on = ev[0]["involvedObject"].value("name", "");
  EXPECT_TRUE(on.rfind("t-", 0) == 0 && on != "t-3" && on != "t-3r") << on;
  EXPECT_NE(ev[0].value("message", "").find("only 4 of the gang's GPUs in its"), std::string::npos)
      << ev[0].dump();
  const std::string metrics = Metrics();
  EXPECT_NE(metrics.find("topogang_gangs_degraded 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(topogang_gang_events_total{event="repair_degraded"} 1)"),
            std::string::npos)
      << metrics;
}

// Then the lone tray fails too, and the first one is back: the next new pod binds home in
// leaf-0, the daemon posts RepairRestored and the gauge drops to 0.
TEST_F(RepairDegradedEndToEnd, ARepairThatGoesHomeClearsTheMark) {
  const std::string first = DegradeOneTray();
  ASSERT_FALSE(HasFailure());
  // One at a time, each seen by topogangd before the next step (its node watch may lag the
  // emulator's, as an informer does): first back, then the lone tray down.
  auto healthy = [&](int n) {
    return emu->WaitFor(
        [&] {
          return Metrics().find(absl::StrCat("topogang_nodes{state=\"healthy\"} ", n)) !=
                 std::string::npos;
        },
        absl::Seconds(20));
  };
  Fail(first, false);
  ASSERT_TRUE(healthy(12)) << Metrics();
  Fail(BoundNode("t-3r"), true);
  ASSERT_TRUE(healthy(11)) << Metrics();
  api.DeletePod("default", "t-3r");
  api.PutPod(GangPod("t-3h", "t", 8, 4));
  ASSERT_TRUE(WaitBound({"t-3h"})) << topogangd.LogTail(30);
  EXPECT_EQ(BoundNode("t-3h"), first) << "the only free tray in leaf-0";
  ASSERT_TRUE(emu->WaitFor([&] { return !Events("RepairRestored").empty(); }, absl::Seconds(20)))
      << topogangd.LogTail(30);
  const std::vector<Json> ev = Events("RepairRestored");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].value("type", ""), "Normal");
  const std::string metrics = Metrics();
  EXPECT_NE(metrics.find("topogang_gangs_degraded 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(topogang_gang_events_total{event="repair_restored"} 1)"),
            std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace topogang::kubesched
