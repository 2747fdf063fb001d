// The emulator driving the real topogangd binary (cluster mode, against the fake API server),
// as the gang tests and the benchmark do: a smoke test that the two speak the same wire.
#include <gtest/gtest.h>

#include <set>

#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using topogang::testing::FakeApiServer;

TEST(TopogangdThroughTheEmulator, AGangOfFourBindsWholeInsideOneLeaf) {
  FakeApiServer api;
  for (int i = 0; i < 8; ++i) {
    api.PutNode(topogang::testing::MakeNode(
        "gpu-node-" + std::to_string(i), 8,
        {{"network.topology.nvidia.com/spine", "spine-0"},
         {"network.topology.nvidia.com/leaf", "leaf-" + std::to_string(i / 4)}}));
  }
  testing::TopogangdProcess topogangd;
  ASSERT_TRUE(
      topogangd
          .Start({.binary = std::string(TOPOGANG_BIN_DIR) + "/topogangd", .api_url = api.url()})
          .ok())
      << topogangd.Log();

  // deploy/scheduler-config.yaml, with time 10x faster.
  Emulator emu(testing::DeployedSchedulerOptions(api.url(), topogangd.url()));
  ASSERT_TRUE(emu.Start().ok());
  for (int m = 0; m < 4; ++m) {
    const std::string name = "train-" + std::to_string(m);
    Json pod = {{"metadata",
                 {{"name", name},
                  {"namespace", "default"},
                  {"uid", "uid-" + name},
                  {"labels", {{"topogang.io/gang", "train"}, {"topogang.io/gang-size", "4"}}}}},
                {"spec",
                 {{"schedulerName", "topogang-scheduler"},
                  {"containers",
                   {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}},
                {"status", {{"phase", "Pending"}}}};
    api.PutPod(pod);
  }
  const bool bound = emu.WaitFor(
      [&] {
        for (int m = 0; m < 4; ++m) {
          auto r = emu.Record("default/train-" + std::to_string(m));
          if (!r || r->node_name.empty()) return false;
        }
        return true;
      },
      absl::Seconds(20));
  std::set<std::string> nodes, leaves;
  for (int m = 0; m < 4; ++m) {
    std::string node = emu.Record("default/train-" + std::to_string(m))->node_name;
    nodes.insert(node);
    if (!node.empty()) leaves.insert(std::to_string(std::stoi(node.substr(9)) / 4));
  }
  emu.Stop();
  topogangd.Stop();
  ASSERT_TRUE(bound);
  EXPECT_EQ(nodes.size(), 4u);
  EXPECT_EQ(leaves.size(), 1u);
  EXPECT_EQ(emu.counters().bind_failures, 0);
  EXPECT_EQ(emu.counters().bind_calls, 4);
}

}  // namespace
}  // namespace topogang::kubesched
