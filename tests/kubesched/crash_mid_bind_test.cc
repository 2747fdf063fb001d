// topogangd killed (SIGKILL: a crash, an OOM kill) while a gang's barrier has opened and its
// bindings are going out, end to end behind the kube-scheduler emulator. Two members are bound,
// two bindings are in flight at the API server (they land as the process dies: the API server
// applies what it received), and four were never posted. A new topogangd on the same address
// must adopt the four bound members where they run and place the other four on the free nodes
// beside them: the gang ends whole, every pod bound once, no node given more GPUs than it has.
// docs/high-availability.md, "What happens on failover", describes this; this test runs it,
// and the same crash while members still wait at the barrier, before anything was posted.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/daemon_harness.h"

namespace topogang::kubesched {
namespace {

using testing::GangPod;
using testing::TopogangdOptions;
using testing::TopogangdProcess;

constexpr int kNodes = 10, kMembers = 8;

class CrashMidBindEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < kNodes; ++i) testing::PutGpuNode(api, absl::StrCat("n", i), "leaf-0");
    // The first two bindings go through; the next ones wait here until the test lets them go
    // (after the kill). Two pool threads (bind_parallelism 2) are then stuck in them, so the
    // gang's other four bindings are never posted by the process that dies.
    api.SetBindingHook([this](const std::string&, const std::string&) {
      std::unique_lock<std::mutex> lock(mu_);
      if (bindings_seen_++ < 2) return;
      ++blocked_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
    });
  }
  void TearDown() override {
    Release();  // never leave a request of the API server stuck
    if (emu) emu->Stop();
    restarted.Stop();
    first.Stop();
  }
  TopogangdOptions Options(int port) {
    return {.binary = std::string(TOPOGANG_BIN_DIR) + "/topogangd",
            .api_url = api.url(),
            .bind_window_ms = 300,
            .bind_parallelism = 2,
            .reservation_ttl_seconds = 3,
            .port = port};
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  bool WaitBlocked(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return blocked_ >= n; });
  }
  // Pod name -> node, per the API server.
  std::map<std::string, std::string> BoundNodes() {
    std::map<std::string, std::string> out;
    for (const Json& p : api.Pods()) {
      const std::string node = p["spec"].value("nodeName", "");
      if (!node.empty()) out[p["metadata"]["name"].get<std::string>()] = node;
    }
    return out;
  }

  topogang::testing::FakeApiServer api;
  TopogangdProcess first, restarted;
  std::unique_ptr<Emulator> emu;
  std::mutex mu_;
  std::condition_variable cv_;
  int bindings_seen_ = 0, blocked_ = 0;
  bool released_ = false;
};

TEST_F(CrashMidBindEndToEnd, AGangKilledMidBindEndsWholeUnderTheNextTopogangd) {
  ASSERT_TRUE(first.Start(Options(0)).ok()) << first.Log();
  emu = std::make_unique<Emulator>(testing::DeployedSchedulerOptions(api.url(), first.url()));
  ASSERT_TRUE(emu->Start().ok());
  std::vector<std::string> pods;
  for (int m = 0; m < kMembers; ++m) {
    pods.push_back(absl::StrCat("g-", m));
    api.PutPod(GangPod(pods.back(), "g", kMembers, 8));
  }
  ASSERT_TRUE(WaitBlocked(2)) << "the barrier never opened: " << first.LogTail(30);
  first.Kill();
  Release();  // the two bindings in flight land as the process dies
  ASSERT_TRUE(api.WaitFor([&] { return BoundNodes().size() == 4; }, 10000))
      << BoundNodes().size() << " bound; the crash was not mid-bind";
  const std::map<std::string, std::string> before = BoundNodes();

  ASSERT_TRUE(restarted.Start(Options(first.port())).ok()) << restarted.Log();
  ASSERT_TRUE(api.WaitFor([&] { return BoundNodes().size() == kMembers; }, 20000))
      << BoundNodes().size() << " of " << kMembers << " bound\n"
      << restarted.LogTail(40);
  const std::map<std::string, std::string> after = BoundNodes();
  for (const auto& [pod, node] : before) {
    EXPECT_EQ(after.at(pod), node) << pod << " moved";
  }
  // 8 GPUs per pod and per node: a node shared by two members has 16 GPUs promised.
  std::set<std::string> nodes;
  for (const auto& [pod, node] : after) {
    EXPECT_TRUE(nodes.insert(node).second) << "two members on " << node;
  }
  std::map<std::string, int> bound_per_pod;
  for (const Json& b : api.bindings()) bound_per_pod[b["metadata"].value("name", "")]++;
  for (const std::string& p : pods) EXPECT_EQ(bound_per_pod[p], 1) << p;
  // Nothing left reserved or held once the gang runs.
  EXPECT_TRUE(api.WaitFor([&] { return restarted.ReservedGangs() == 0; }, 10000))
      << restarted.Stats().value_or(Json()).dump();
  if (std::getenv("TOPOGANG_CRASH_VERBOSE")) std::cerr << restarted.Log();
}

// Killed while members wait at the barrier for the last one (nothing posted yet): the next
// topogangd plans the gang afresh and it binds whole once the last member comes.
TEST_F(CrashMidBindEndToEnd, AGangKilledAtTheBarrierBindsWholeUnderTheNextTopogangd) {
  Release();  // no binding is held at the API server here
  ASSERT_TRUE(first.Start(Options(0)).ok()) << first.Log();
  emu = std::make_unique<Emulator>(testing::DeployedSchedulerOptions(api.url(), first.url()));
  ASSERT_TRUE(emu->Start().ok());
  std::vector<std::string> pods;
  for (int m = 0; m < kMembers; ++m) pods.push_back(absl::StrCat("g-", m));
  for (int m = 0; m + 1 < kMembers; ++m) api.PutPod(GangPod(pods[m], "g", kMembers, 8));
  ASSERT_TRUE(emu->WaitFor([&] {
    auto r = emu->Record("default/g-0");
    return r && r->binding;
  })) << "no member reached the barrier: "
      << first.LogTail(30);
  first.Kill();
  EXPECT_TRUE(BoundNodes().empty()) << "a member was bound before the gang was whole";
  ASSERT_TRUE(restarted.Start(Options(first.port())).ok()) << restarted.Log();
  api.PutPod(GangPod(pods.back(), "g", kMembers, 8));
  ASSERT_TRUE(api.WaitFor([&] { return BoundNodes().size() == kMembers; }, 20000))
      << BoundNodes().size() << " of " << kMembers << " bound\n"
      << restarted.LogTail(40);
  std::set<std::string> nodes;
  for (const auto& [pod, node] : BoundNodes()) {
    EXPECT_TRUE(nodes.insert(node).second) << "two members on " << node;
  }
  EXPECT_EQ(api.bindings().size(), static_cast<size_t>(kMembers));
}

}  // namespace
}  // namespace topogang::kubesched
