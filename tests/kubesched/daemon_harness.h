// The real topogangd behind the kube-scheduler emulator, both against the fake API server: the
// harness of the end-to-end #13 tests (spares, elastic gangs). kube-scheduler is configured as
// deploy/scheduler-config.yaml configures it, with its time running kTimeScale times faster.
#pragma once

#include <cpprest/http_client.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/kubesched/emulator.h"
#include "tests/kubesched/topogangd_process.h"
#include "tests/support/fake_apiserver.h"

namespace topogang::kubesched::testing {

inline constexpr double kTimeScale = 10;

// deploy/scheduler-config.yaml: topogangd as the extender (weight 5, httpTimeout 5 s), every
// node scored.
inline EmulatorOptions DeployedSchedulerOptions(const std::string& api_url,
                                                const std::string& extender_url) {
  EmulatorOptions o;
  o.api_server_url = api_url;
  o.scheduler_name = "topogang-scheduler";
  o.extenders = {ExtenderConfig{.url_prefix = extender_url, .weight = 5}};
  o.percentage_of_nodes_to_score = 100;
  o.time_scale = kTimeScale;
  return o;
}

// An 8-GPU node under spine-0 and `leaf` (plus `labels`), with kubelet's pod capacity.
inline void PutGpuNode(topogang::testing::FakeApiServer& api, const std::string& name,
                       const std::string& leaf, std::map<std::string, std::string> labels = {}) {
  labels["network.topology.nvidia.com/spine"] = "spine-0";
  labels["network.topology.nvidia.com/leaf"] = leaf;
  Json n = topogang::testing::MakeNode(name, 8, labels);
  n["status"]["allocatable"]["pods"] = "110";
  api.PutNode(n);
}

// Two pools of four such nodes, a0-a3 and b0-b3, one leaf each, labelled pool=a|b; b0 alone is
// labelled blocker=yes (where a test puts a busy job). Returns pool a's and pool b's names.
inline std::pair<std::set<std::string>, std::set<std::string>> PutTwoPools(
    topogang::testing::FakeApiServer& api) {
  std::pair<std::set<std::string>, std::set<std::string>> pools;
  for (const char* pool : {"a", "b"}) {
    for (int i = 0; i < 4; ++i) {
      const std::string name = pool + std::to_string(i);
      PutGpuNode(api, name, pool, {{"pool", pool}, {"blocker", name == "b0" ? "yes" : "no"}});
      (*pool == 'a' ? pools.first : pools.second).insert(name);
    }
  }
  return pools;
}

// Put the cluster's nodes into `api` in SetUp, then call StartAll (with extra daemon: keys, and
// a change to kube-scheduler's options where a test needs one).
class EmulatedDaemonTest : public ::testing::Test {
 protected:
  // topogangd's /metrics text (the error's text if the GET fails).
  std::string Metrics() {
    try {
      web::http::client::http_client client(topogangd.url());
      return client.request(web::http::methods::GET, "/metrics")
          .get()
          .extract_utf8string(true)
          .get();
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  void StartAll(const std::string& daemon_extra = "",
                const std::function<void(EmulatorOptions&)>& tweak = {}) {
    ASSERT_TRUE(topogangd
                    .Start({.binary = std::string(TOPOGANG_BIN_DIR) + "/topogangd",
                            .api_url = api.url(),
                            .bind_window_ms = 300,
                            .reservation_ttl_seconds = 3,
                            .daemon_extra = daemon_extra})
                    .ok())
        << topogangd.Log();
    EmulatorOptions o = DeployedSchedulerOptions(api.url(), topogangd.url());
    if (tweak) tweak(o);
    emu = std::make_unique<Emulator>(o);
    ASSERT_TRUE(emu->Start().ok());
  }
  void TearDown() override {
    if (emu) emu->Stop();
    topogangd.Stop();
  }
  // The node the pod (namespace default) is bound to, per the emulator; "" while pending.
  std::string BoundNode(const std::string& pod) {
    auto r = emu->Record("default/" + pod);
    return r ? r->node_name : "";
  }
  // Creates gang `gang`'s pods, named gang-0 .. gang-(members - 1), each of `gpus` GPUs with
  // `spec` merged in (GangPod); returns their names in order. `gang` "": `members` separate pods
  // of no gang, named `prefix`-0 ...
  std::vector<std::string> PutGang(const std::string& gang, int members, int gpus,
                                   const Json& spec = Json::object(),
                                   const std::string& prefix = "") {
    std::vector<std::string> pods;
    for (int m = 0; m < members; ++m) {
      pods.push_back(absl::StrCat(gang.empty() ? prefix : gang, "-", m));
      api.PutPod(GangPod(pods.back(), gang, gang.empty() ? 1 : members, gpus, spec));
    }
    return pods;
  }
  bool WaitBound(const std::vector<std::string>& pods) {
    return emu->WaitFor(
        [&] {
          for (const std::string& p : pods) {
            if (BoundNode(p).empty()) return false;
          }
          return true;
        },
        absl::Seconds(20));
  }

  topogang::testing::FakeApiServer api;
  TopogangdProcess topogangd;
  std::unique_ptr<Emulator> emu;
};

}  // namespace topogang::kubesched::testing
