// The churn test's cluster (tests/kubesched/churn_test.cc): its nodes, and what happens to them
// (cordons, joins, a machine that dies), with topogangd and kube-scheduler running against it and
// the checks on topogangd's model of it. The jobs on it are the test's.
#pragma once

#include <cpprest/http_client.h>

#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/kubesched/churn_model.h"
#include "tests/kubesched/daemon_harness.h"
#include "tests/support/prom_text.h"

namespace topogang::kubesched::churn {

inline constexpr char kSpine[] = "network.topology.nvidia.com/spine";
inline constexpr char kLeaf[] = "network.topology.nvidia.com/leaf";
// 2 spines x 2 leaves x 6 nodes. Pool a is spine-0, pool b spine-1; leaf-3's nodes have 4 GPUs.
inline constexpr int kSpines = 2, kLeavesPerSpine = 2, kNodesPerLeaf = 6, kJoining = 2;

class ChurnCluster : public testing::EmulatedDaemonTest {
 protected:
  // Creates the nodes (SetUp then starts topogangd and kube-scheduler).
  void MakeCluster() {
    for (int s = 0; s < kSpines; ++s) {
      for (int l = 0; l < kLeavesPerSpine; ++l) {
        const int leaf = s * kLeavesPerSpine + l;
        for (int i = 0; i < kNodesPerLeaf; ++i) {
          NodeSpec n;
          n.name = absl::StrCat("n", leaf, "-", i);
          n.pool = s == 0 ? "a" : "b";
          n.gpus = leaf == 3 ? 4 : 8;
          n.tainted = (leaf == 0 || leaf == 2) && i == kNodesPerLeaf - 1;
          n.object = topogang::testing::MakeNode(n.name, n.gpus,
                                                 {{kSpine, absl::StrCat("spine-", s)},
                                                  {kLeaf, absl::StrCat("leaf-", leaf)},
                                                  {"pool", n.pool}});
          n.object["status"]["allocatable"]["pods"] = "110";
          if (n.tainted) {
            n.object["spec"]["taints"] =
                Json::array({{{"key", "dedicated"}, {"value", "other"}, {"effect", "NoSchedule"}}});
          }
          api.PutNode(n.object);
          total_gpus_ += n.gpus;
          nodes_[n.name] = n;
        }
      }
    }
    // Nodes that join later, in pool b on a leaf of their own (in nodes_ from the start: the
    // checker reads that map while the churn runs).
    for (int i = 0; i < kJoining; ++i) {
      NodeSpec n;
      n.name = absl::StrCat("joined-", i);
      n.pool = "b";
      n.joined = false;
      n.object = topogang::testing::MakeNode(
          n.name, n.gpus,
          {{kSpine, absl::StrCat("spine-", kSpines - 1)}, {kLeaf, "leaf-joined"}, {"pool", "b"}});
      n.object["status"]["allocatable"]["pods"] = "110";
      nodes_[n.name] = n;
    }
  }

  std::vector<std::string> Violations() {
    std::lock_guard<std::mutex> lock(violations_mu_);
    return violations_;
  }
  void Violation(std::string v) {
    std::lock_guard<std::mutex> lock(violations_mu_);
    if (violations_.size() < 20) violations_.push_back(std::move(v));
  }
  void SetCordon(const std::string& node, bool on) {
    NodeSpec& n = nodes_.at(node);
    n.object["spec"]["unschedulable"] = on;
    if (!on) n.object["spec"].erase("unschedulable");
    api.PutNode(n.object);
    if (on) {
      cordoned_.insert(node);
    } else {
      cordoned_.erase(node);
    }
    Log(absl::StrCat(on ? "cordon " : "uncordon ", node));
  }
  // Pods bound to the node (the API server's view).
  int OnNode(const std::string& node) {
    int n = 0;
    for (const Json& p : api.Pods()) n += p["spec"].value("nodeName", "") == node ? 1 : 0;
    return n;
  }
  // topogangd's /metrics, parsed.
  absl::StatusOr<topogang::testing::PromText> Metrics() {
    try {
      web::http::client::http_client client(topogangd.url());
      return topogang::testing::PromText::Parse(
          client.request(web::http::methods::GET, "/metrics").get().extract_utf8string(true).get());
    } catch (const std::exception& e) {
      return absl::UnavailableError(e.what());
    }
  }
  // topogangd's model must follow the cluster's nodes: after a node leaves or joins, the GPUs
  // it counts (free, allocated, unhealthy) reach the cluster's within a few seconds.
  void ExpectModelFollows(const std::string& what) {
    double gpus = -1;
    for (absl::Time deadline = absl::Now() + absl::Seconds(3); absl::Now() < deadline;) {
      auto m = Metrics();
      if (m.ok()) {
        gpus = m->Get("topogang_gpus", {{"state", "free"}}) +
               m->Get("topogang_gpus", {{"state", "allocated"}}) +
               m->Get("topogang_gpus", {{"state", "unhealthy"}});
      }
      if (gpus == total_gpus_) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
    Violation(absl::StrCat("3 s after ", what, ", topogangd's model has ", gpus,
                           " GPUs; the cluster has ", total_gpus_));
  }
  void Join(NodeSpec& n) {
    n.joined = true;
    down_.erase(n.name);
    api.PutNode(n.object);
    total_gpus_ += n.gpus;
    Log("join " + n.name);
    ExpectModelFollows(n.name + " joined");
  }
  // A node carrying bound pods leaves the cluster (its machine died and the cloud controller
  // deleted the Node). Its pods stay bound to it until the pod garbage collector deletes them
  // (CollectOrphans); it may come back later, empty, as a rebooted machine does (Join).
  void FailNode() {
    if (!down_.empty()) return;  // one at a time
    std::vector<std::string> busy;
    for (const auto& [name, n] : nodes_) {
      if (n.joined && OnNode(name) > 0) busy.push_back(name);
    }
    if (busy.empty()) return;
    NodeSpec& n = nodes_.at(busy[rng_() % busy.size()]);
    api.DeleteNode(n.name);
    n.joined = false;
    total_gpus_ -= n.gpus;
    down_.insert(n.name);
    ++nodes_failed_;
    Log("node " + n.name + " deleted with " + std::to_string(OnNode(n.name)) + " pods bound");
    ExpectModelFollows(n.name + " was deleted");
  }
  void Log(std::string s) {
    log_.push_back(
        absl::StrCat(absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone()), " ", s));
  }

  std::mt19937_64 rng_;
  // Every node ever created; no entry is added after MakeCluster (the checker thread reads the
  // map), and the step thread changes only `object` and `joined`.
  std::map<std::string, NodeSpec> nodes_;
  int total_gpus_ = 0;  // of the nodes in the cluster now
  std::set<std::string> cordoned_;
  std::set<std::string> down_;  // nodes deleted by FailNode and not back yet
  int nodes_failed_ = 0;
  std::vector<std::string> log_;  // the steps, for a failure's report
  std::mutex violations_mu_;
  std::vector<std::string> violations_;
};

}  // namespace topogang::kubesched::churn
