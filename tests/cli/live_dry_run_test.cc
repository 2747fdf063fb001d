// `topogang dry-run --kubeconfig` and `kubectl topogang dry-run`: the real binary plans against a
// fake API server's Nodes and Pods (no daemon), seeing what topogangd would see: GPUs held by
// bound pods, cordoned nodes, tiers detected from Topograph labels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/test_util.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using testing::CliResult;
using testing::FakeApiServer;
using ::testing::HasSubstr;
using testing::TempFile;

// Two leaves of two 8-GPU nodes under one spine, Topograph labels.
void AddCluster(FakeApiServer& api) {
  for (int i = 0; i < 4; ++i) {
    api.PutNode(
        testing::MakeNode(absl::StrFormat("gpu-%d", i), 8,
                          {{"network.topology.nvidia.com/spine", "spine-0"},
                           {"network.topology.nvidia.com/leaf", absl::StrCat("leaf-", i / 2)},
                           {"nvidia.com/gpu.product", "H100"}}));
  }
}

std::string Kubeconfig(const FakeApiServer& api) {
  return TempFile("kubeconfig", absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: fake
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
clusters: [{name: fake, cluster: {server: )",
                                             api.url(), R"(}}]
users: [{name: fake, user: {token: t}}]
)"));
}

// Runs build/bin/<binary> with `env` (VAR=value ...) in front; stderr merged when `merge`.
CliResult RunBinary(const std::string& env, const std::string& binary, const std::string& args,
                    bool merge) {
  std::string cmd = env + " " + testing::BinDir() + "/" + binary + " " + args +
                    (merge ? " 2>&1" : " 2>/dev/null");
  CliResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(LiveDryRun, PlansAroundWhatBoundPodsHoldAndCordonedNodes) {
  FakeApiServer api;
  AddCluster(api);
  api.PutPod(testing::RunningPod("running", 8, "gpu-0"));
  Json cordoned = api.GetNode("gpu-3");
  cordoned["spec"]["unschedulable"] = true;
  api.PutNode(cordoned);
  // Two full nodes fit only in leaf-0... whose gpu-0 is taken: only gpu-1 and gpu-2 are free.
  std::string jobs = TempFile("jobs.yaml", R"(jobs:
- {name: pair-in-a-leaf, members: 2, gpus_per_member: 8, required_tier: leaf}
- {name: two-nodes, members: 2, gpus_per_member: 8}
- {name: one-more, members: 1, gpus_per_member: 8}
)");
  CliResult r =
      RunBinary("", "topogang",
                "dry-run --format json --kubeconfig " + Kubeconfig(api) + " --jobs " + jobs, false);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["placed"], false) << "no leaf has two free nodes";
  EXPECT_EQ(j[1]["placed"], true);
  EXPECT_EQ(j[1]["nodes"], (nlohmann::json{"gpu-1", "gpu-2"}));
  EXPECT_EQ(j[2]["placed"], false) << "gpu-0 is held by a bound pod, gpu-3 is cordoned";
  EXPECT_TRUE(api.bindings().empty()) << "a dry run binds nothing";
}

TEST(LiveDryRun, KubectlPluginUsesTheKubeconfigByDefault) {
  FakeApiServer api;
  AddCluster(api);
  std::string jobs =
      TempFile("jobs.yaml", "jobs: [{name: leaf-pair, members: 2, gpus_per_member: 8}]\n");
  // HOME without a .kube/config and no KUBECONFIG: nothing to read, a clear error.
  CliResult none = RunBinary("env -u KUBECONFIG HOME=/nonexistent", "kubectl-topogang",
                             "dry-run --jobs " + jobs, true);
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_THAT(none.out, HasSubstr("/nonexistent/.kube/config"));
  CliResult ok = RunBinary("KUBECONFIG=" + Kubeconfig(api), "kubectl-topogang",
                           "dry-run --jobs " + jobs, true);
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_THAT(ok.out, HasSubstr("live cluster " + api.url()));
  EXPECT_THAT(ok.out, HasSubstr("1 of 1 gangs placed"));
  EXPECT_THAT(ok.out, HasSubstr("tiers spine > leaf"));
}

TEST(LiveDryRun, AnUnreachableApiServerIsAClearError) {
  std::string kc = TempFile("kubeconfig-bad", R"(apiVersion: v1
kind: Config
current-context: x
contexts: [{name: x, context: {cluster: x, user: x}}]
clusters: [{name: x, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: x, user: {}}]
)");
  std::string jobs = TempFile("jobs.yaml", "jobs: [{name: a, members: 1, gpus_per_member: 8}]\n");
  CliResult r =
      testing::RunTopogang("dry-run --kubeconfig " + kc + " --jobs " + jobs + " --cluster x.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("exclusive"));
  CliResult down =
      testing::RunTopogang("dry-run --timeout 1 --kubeconfig " + kc + " --jobs " + jobs);
  EXPECT_EQ(down.code, 2) << down.out;
  EXPECT_THAT(down.out, HasSubstr("could not list the Nodes and Pods of http://127.0.0.1:1"));
}

}  // namespace
}  // namespace topogang
