// The emulator driving the real topogangd binary (cluster mode, against the fake API server),
// as the gang tests and the benchmark do: a smoke test that the two speak the same wire.
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include KUBESCHED_FAKE_API_HEADER
#include "tests/kubesched/emulator.h"
#include "tests/kubesched/fake_extender.h"

namespace topogang::kubesched {
namespace {

using topogang::testing::FakeApiServer;

// Starts build/bin/topogangd and waits for /readyz; -1 when it never became ready.
pid_t StartTopogangd(const std::vector<std::string>& args, int port) {
  const std::string bin = std::string(TOPOGANG_BIN_DIR) + "/topogangd";
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>("topogangd")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  web::http::client::http_client client("http://127.0.0.1:" + std::to_string(port));
  for (absl::Time deadline = absl::Now() + absl::Seconds(20); absl::Now() < deadline;) {
    try {
      if (client.request(web::http::methods::GET, "/readyz").get().status_code() == 200) return pid;
    } catch (...) {
    }
    absl::SleepFor(absl::Milliseconds(20));  // the process is still starting
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

TEST(TopogangdThroughTheEmulator, AGangOfFourBindsWholeInsideOneLeaf) {
  FakeApiServer api;
  for (int i = 0; i < 8; ++i) {
    api.PutNode(topogang::testing::MakeNode(
        "gpu-node-" + std::to_string(i), 8,
        {{"network.topology.nvidia.com/spine", "spine-0"},
         {"network.topology.nvidia.com/leaf", "leaf-" + std::to_string(i / 4)}}));
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("kubesched-topogangd-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "kubeconfig") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                    << "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                    << "clusters: [{name: k, cluster: {server: '" << api.url()
                                    << "'}}]\nusers: [{name: u, user: {token: t}}]\n";
  std::ofstream(dir / "config.yaml") << "topology: {preset: topograph}\n";
  const int port = testing::FreeLoopbackPort();
  pid_t pid = StartTopogangd(
      {"--kubeconfig", (dir / "kubeconfig").string(), "--config", (dir / "config.yaml").string(),
       "--http-port", std::to_string(port), "--bind-address", "127.0.0.1", "--leader-elect=false"},
      port);
  ASSERT_GT(pid, 0) << "topogangd did not become ready";

  // deploy/scheduler-config.yaml, with time 10x faster.
  EmulatorOptions o;
  o.api_server_url = api.url();
  o.scheduler_name = "topogang-scheduler";
  o.extenders = {
      ExtenderConfig{.url_prefix = "http://127.0.0.1:" + std::to_string(port), .weight = 5}};
  o.percentage_of_nodes_to_score = 100;
  o.time_scale = 10;
  Emulator emu(o);
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
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(bound);
  EXPECT_EQ(nodes.size(), 4u);
  EXPECT_EQ(leaves.size(), 1u);
  EXPECT_EQ(emu.counters().bind_failures, 0);
  EXPECT_EQ(emu.counters().bind_calls, 4);
}

}  // namespace
}  // namespace topogang::kubesched
