// Over 500 lines: one suite for cluster mode end to end; its cases share the KubeDaemon fixture.
// Cluster mode against a fake API server: kubeconfig/in-cluster config, list + watch with
// bookmarks, 410 Gone relists, dropped connections, health from cordons/taints, occupancy from
// bound pods, bindings through the binding subresource (201/409), Events, and a daemon restart
// in the middle of a gang.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "kube/kube_evictor.h"
#include "kube/kube_sync.h"
#include "kube/node_annotation_writer.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/harness.h"
#include "tests/test_util.h"

namespace topogang {
namespace {

using testing::FakeApiServer;
using testing::GangPod;
using testing::MakeNode;
using testing::MakePod;
using testing::NodeNames;
using testing::PodOpts;

std::map<std::string, std::string> Labels(int i) {
  return {{"topology.kubernetes.io/zone", "zone-a"},
          {"topology.example.com/switch", "switch-00"},
          {"topology.example.com/rack", absl::StrFormat("rack-%03d", i / 4)},
          {"nvidia.com/gpu.product", "H100"}};
}

void AddNodes(FakeApiServer& api, int n) {
  for (int i = 0; i < n; ++i)
    api.PutNode(MakeNode(absl::StrFormat("gpu-node-%03d", i), 8, Labels(i)));
}

Json BoundPod(const std::string& name, const std::string& node, int gpus) {
  return testing::RunningPod(name, gpus, node);
}

// Polls `pred` until it holds or 10 s pass (a real server must react first).
template <typename Pred>
bool Eventually(Pred pred) {
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return pred();
}

// topogangd in cluster mode: state starts empty, KubeSync fills it from the fake API server.
class KubeDaemon {
 public:
  explicit KubeDaemon(FakeApiServer& api, absl::Duration window = absl::Seconds(10),
                      absl::Duration reservation_ttl = absl::Milliseconds(500)) {
    KubeConfig kc;
    kc.server = api.url();
    client_ = std::make_shared<KubeClient>(kc);
    binder_ = std::make_unique<KubeBinder>(client_);
    evictor_ = std::make_unique<KubeEvictor>(client_);
    GangLedgerOptions eo;
    eo.bind_window = window;
    eo.tick = absl::Milliseconds(20);
    eo.sweep = absl::Milliseconds(20);
    SchedulerOptions sched;
    sched.reservation_ttl = reservation_ttl;
    h_ = std::make_unique<testing::Harness>(*Cluster::Build(ClusterSpec{}, testing::TestTopology()),
                                            eo, HttpServerOptions{}, binder_.get(), sched);
    KubeSyncOptions so;
    so.backoff_initial = absl::Milliseconds(10);
    so.backoff_max = absl::Milliseconds(100);
    sync_ = std::make_unique<KubeSync>(client_, h_->state(), testing::TestTopology(),
                                       "nvidia.com/gpu", so);
    sync_->Attach(&h_->ledger(), nullptr);
    h_->ledger().SetEvictor(evictor_.get());
    drains_ = std::make_unique<NodeAnnotationWriter>(client_, absl::Milliseconds(10));
    h_->state().SetDrainRecorder(
        [w = drains_.get()](const std::string& node, bool drained, const std::string& reason) {
          w->RecordDrain(node, drained, reason);
        });
    h_->ledger().SetWaker([w = drains_.get()](const std::string& node, const std::string& gang) {
      w->RecordWake(node, gang);
    });
    sync_->Start();
  }
  ~KubeDaemon() {
    h_->state().SetDrainRecorder(nullptr);
    h_->ledger().SetWaker(nullptr);
    sync_->Stop();
  }
  NodeAnnotationWriter& drains() { return *drains_; }

  testing::Harness& h() { return *h_; }
  KubeSync& sync() { return *sync_; }
  int FreeOn(const std::string& node) {
    return h_->state().With([&](GangScheduler& s) {
      const Cluster& c = s.cluster();
      int n = c.FindNode(node);
      if (n < 0) return -1;
      int free = 0;
      for (int g = c.node(n).gpu_begin; g < c.node(n).gpu_begin + c.node(n).gpus; ++g)
        free += c.IsFree(g);
      return free;
    });
  }
  int Nodes() {
    return h_->state().With([](GangScheduler& s) { return s.cluster().num_nodes(); });
  }

 private:
  std::shared_ptr<KubeClient> client_;
  std::unique_ptr<KubeBinder> binder_;
  std::unique_ptr<KubeEvictor> evictor_;  // before h_: the ledger's evictions call it
  std::unique_ptr<testing::Harness> h_;
  std::unique_ptr<KubeSync> sync_;
  std::unique_ptr<NodeAnnotationWriter> drains_;
};

// Cordons gpu-node-<i> and waits until topogangd's health has it.
bool CordonAndSee(FakeApiServer& api, KubeDaemon& d, int i) {
  const std::string name = absl::StrFormat("gpu-node-%03d", i);
  Json n = MakeNode(name, 8, Labels(i));
  n["spec"]["unschedulable"] = true;
  api.PutNode(n);
  return Eventually([&] {
    return d.h().state().NodeHealthSources(name) & static_cast<uint8_t>(HealthSource::kKubeCordon);
  });
}

std::string Filter1(testing::Harness& h, const Json& pod, const std::vector<std::string>& names) {
  auto f = ParseFilterResult(h.Post("/filter", testing::FilterBody(pod, names)).body);
  if (!f.ok() || f->node_names.size() != 1) return "";
  return f->node_names[0];
}

pplx::task<testing::Reply> BindAsync(testing::Harness& h, const Json& pod,
                                     const std::string& node) {
  return h.PostAsync("/bind", SerializeBindingArgs({pod["metadata"]["name"], "default",
                                                    pod["metadata"]["uid"], node}));
}

TEST(KubeConfigTest, KubeconfigWithTokenCaAndClientCert) {
  std::string yaml = absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: ctx
contexts:
- name: other
  context: {cluster: nope, user: nope}
- name: ctx
  context: {cluster: c1, user: u1}
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )",
                                  absl::Base64Escape("CA-PEM"), R"(
users:
- name: u1
  user:
    token: secret-token
    client-certificate-data: )",
                                  absl::Base64Escape("CERT"),
                                  "\n    client-key-data: ", absl::Base64Escape("KEY"), "\n");
  auto c = ParseKubeconfig(yaml, "kubeconfig", ".");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->token, "secret-token");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_FALSE(c->insecure_skip_verify);
  EXPECT_FALSE(ParseKubeconfig("current-context: x\n", "k", ".").ok());
  EXPECT_FALSE(ParseKubeconfig("[", "k", ".").ok());
}

// A credential plugin as kubectl runs it: a script next to the kubeconfig that counts its runs,
// checks it got its env and KUBERNETES_EXEC_INFO, and prints an ExecCredential.
class ExecPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/exec-", getpid(), "-", rand());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `expiry`: the expirationTimestamp to print ("" = none).
  void WritePlugin(const std::string& expiry, const std::string& extra = "") {
    std::ofstream f(dir_ + "/plugin.sh");
    f << "#!/bin/sh\n"
      << "n=$(cat \"$0.count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0.count\"\n"
      << "[ \"$REGION\" = \"eu-west-1\" ] || { echo 'REGION not set' >&2; exit 3; }\n"
      << "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) exit 4;; esac\n"
      << extra
      << "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
      << "\"status\":{\"token\":\"tok-%s-%s\""
      << (expiry.empty() ? "" : ",\"expirationTimestamp\":\"" + expiry + "\"")
      << "}}' \"$1\" \"$n\"\n";
    f.close();
    std::filesystem::permissions(dir_ + "/plugin.sh", std::filesystem::perms::owner_all);
  }
  int Runs() {
    std::ifstream f(dir_ + "/plugin.sh.count");
    int n = 0;
    f >> n;
    return n;
  }
  std::string Kubeconfig(const std::string& server) {
    return absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: c\n",
                        "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
                        "clusters: [{name: k, cluster: {server: '", server, "'}}]\n",
                        "users:\n- name: u\n  user:\n    exec:\n",
                        "      apiVersion: client.authentication.k8s.io/v1\n",
                        "      command: ./plugin.sh\n      args: [abc]\n",
                        "      env: [{name: REGION, value: eu-west-1}]\n");
  }
  std::string dir_;
};

TEST_F(ExecPluginTest, TokenFromThePluginCachedUntilExpiryOrRefusal) {
  testing::FakeApiServer api;
  WritePlugin("2099-01-01T00:00:00Z");
  auto c = ParseKubeconfig(Kubeconfig(api.url()), "kubeconfig", dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->exec.has_value());
  EXPECT_EQ(c->exec->command, dir_ + "/./plugin.sh") << "relative to the kubeconfig";
  EXPECT_EQ(c->exec->args, std::vector<std::string>{"abc"});
  api.RequireToken("tok-abc-1");
  KubeClient client(*c);
  for (int i = 0; i < 3; ++i) {
    auto r = client.Get("/api/v1/nodes");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 200) << r->body;
  }
  EXPECT_EQ(Runs(), 1) << "a valid token is reused";
  // The server stops accepting it (rotated): one 401, then the plugin runs again.
  api.RequireToken("tok-abc-2");
  EXPECT_EQ(client.Get("/api/v1/nodes")->status, 401);
  EXPECT_EQ(client.Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(Runs(), 2);
  EXPECT_EQ(api.authorizations().back(), "Bearer tok-abc-2");
}

TEST_F(ExecPluginTest, ExpiringTokensAreRefreshed) {
  testing::FakeApiServer api;
  WritePlugin(
      absl::FormatTime(absl::RFC3339_sec, absl::Now() + absl::Seconds(10), absl::UTCTimeZone()));
  auto c = ParseKubeconfig(Kubeconfig(api.url()), "kubeconfig", dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  KubeClient client(*c);
  ASSERT_TRUE(client.Get("/api/v1/nodes").ok());
  ASSERT_TRUE(client.Get("/api/v1/nodes").ok());
  // 10 s left is inside the 30 s refresh margin: every request asks the plugin again.
  EXPECT_EQ(Runs(), 2);
  auto auths = api.authorizations();
  ASSERT_EQ(auths.size(), 2u);
  EXPECT_EQ(auths[0], "Bearer tok-abc-1");
  EXPECT_EQ(auths[1], "Bearer tok-abc-2");
}

TEST_F(ExecPluginTest, PluginFailuresAreClearErrors) {
  ExecPlugin p;
  p.api_version = "client.authentication.k8s.io/v1";
  p.env = {{"REGION", "eu-west-1"}};
  p.command = dir_ + "/plugin.sh";
  WritePlugin("", "echo 'token expired, run aws sso login' >&2; exit 1\n");
  auto r = RunExecPlugin(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exit status 1"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("aws sso login"), std::string::npos) << r.status();
  WritePlugin("", "exec sleep 5\n");
  r = RunExecPlugin(p, absl::Milliseconds(200));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  p.env.clear();
  WritePlugin("");
  EXPECT_NE(RunExecPlugin(p).status().message().find("REGION not set"), std::string::npos);
  p.command = dir_ + "/missing";
  EXPECT_FALSE(RunExecPlugin(p).ok());
  // What a plugin prints must be an ExecCredential with a token.
  const std::string v1 = "client.authentication.k8s.io/v1";
  EXPECT_FALSE(ParseExecCredential("not json", v1).ok());
  EXPECT_FALSE(ParseExecCredential(R"({"kind":"Pod","apiVersion":"v1"})", v1).ok());
  EXPECT_FALSE(
      ParseExecCredential(
          R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}})",
          v1)
          .ok());
  EXPECT_EQ(
      ParseExecCredential(
          R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientCertificateData":"x"}})",
          v1)
          .status()
          .code(),
      absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(
      ParseExecCredential(
          R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"soon"}})",
          v1)
          .ok());
  auto ok = ParseExecCredential(
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
      v1);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->token, "t");
  EXPECT_EQ(*ok->expires,
            absl::FromCivil(absl::CivilSecond(2030, 1, 2, 3, 4, 5), absl::UTCTimeZone()));
  // Kubeconfig mistakes.
  for (const char* exec : {"      command: ''\n      apiVersion: client.authentication.k8s.io/v1\n",
                           "      command: x\n      apiVersion: v1\n",
                           "      command: x\n      apiVersion: client.authentication.k8s.io/v1\n"
                           "      args: {a: b}\n",
                           "      command: x\n      apiVersion: client.authentication.k8s.io/v1\n"
                           "      interactiveMode: Always\n"}) {
    std::string yaml = absl::StrCat(
        "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n",
        "clusters: [{name: k, cluster: {server: 'https://x'}}]\nusers:\n- name: u\n  user:\n",
        "    exec:\n", exec);
    EXPECT_FALSE(ParseKubeconfig(yaml, "k", dir_).ok()) << exec;
  }
  std::string ap =
      "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
      "clusters: [{name: k, cluster: {server: 'https://x'}}]\n"
      "users:\n- name: u\n  user:\n    auth-provider: {name: gcp}\n";
  EXPECT_EQ(ParseKubeconfig(ap, "k", dir_).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(KubeConfigTest, InClusterReadsTokenCaAndServiceEnv) {
  std::string dir = absl::StrCat(::testing::TempDir(), "/sa-", getpid());
  std::filesystem::create_directories(dir);
  testing::TempPaths::Get().Add(dir);
  std::ofstream(dir + "/token") << "tok\n";
  std::ofstream(dir + "/ca.crt") << "CA";
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = InClusterConfig(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token, "tok");
  EXPECT_EQ(c->ca_pem, "CA");
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_FALSE(InClusterConfig(dir).ok());
}

TEST(KubeSyncTest, ListWatchBookmarksGoneDropsAndHealth) {
  FakeApiServer api;
  AddNodes(api, 4);
  api.PutPod(BoundPod("running-0", "gpu-node-000", 8));
  PodOpts cpu;
  cpu.name = "cpu-only";
  cpu.gpus = 0;
  api.PutPod(MakePod(cpu));
  KubeDaemon d(api);
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  EXPECT_EQ(d.Nodes(), 4);
  EXPECT_EQ(d.FreeOn("gpu-node-000"), 0) << "a bound GPU pod holds its GPUs";
  EXPECT_EQ(d.FreeOn("gpu-node-001"), 8);
  ASSERT_TRUE(api.WaitFor([&] { return api.open_watches() == 2; }));

  // Cordon -> health source set at once.
  EXPECT_TRUE(CordonAndSee(api, d, 1));
  api.SendBookmark();

  // 410 Gone: relist.
  int lists_before = api.lists("nodes");
  api.Compact();
  EXPECT_TRUE(
      Eventually([&] { return d.sync().relists() >= 1 && api.lists("nodes") > lists_before; }));
  EXPECT_TRUE(api.WaitFor([&] { return api.open_watches() == 2; }));

  // Dropped connection mid-event: reconnect, later events still arrive.
  int watches_before = api.watches("nodes");
  api.DropWatches();
  EXPECT_TRUE(api.WaitFor(
      [&] { return api.watches("nodes") > watches_before && api.open_watches() == 2; }));
  Json n2 = MakeNode("gpu-node-002", 8, Labels(2));
  n2["spec"]["taints"] =
      Json::parse(R"([{"key":"node.kubernetes.io/unreachable","effect":"NoExecute"}])");
  api.PutNode(n2);
  EXPECT_TRUE(Eventually([&] {
    return d.h().state().NodeHealthSources("gpu-node-002") &
           static_cast<uint8_t>(HealthSource::kKubeTaint);
  }));
  Json n3 = MakeNode("gpu-node-003", 8, Labels(3));
  n3["status"]["conditions"][0]["status"] = "False";
  api.PutNode(n3);
  EXPECT_TRUE(Eventually([&] {
    return d.h().state().NodeHealthSources("gpu-node-003") &
           static_cast<uint8_t>(HealthSource::kKubeNotReady);
  }));

  // A new node rebuilds the model; the bound pod keeps its GPUs and health stays applied.
  api.PutNode(MakeNode("gpu-node-004", 8, Labels(4)));
  EXPECT_TRUE(Eventually([&] { return d.Nodes() == 5; }));
  EXPECT_EQ(d.FreeOn("gpu-node-000"), 0);
  EXPECT_TRUE(d.h().state().NodeHealthSources("gpu-node-001") != 0);
  // A pod bound outside topogang is adopted; a deleted one gives its GPUs back.
  api.PutPod(BoundPod("foreign", "gpu-node-004", 3));
  EXPECT_TRUE(Eventually([&] { return d.FreeOn("gpu-node-004") == 5; }));
  api.DeletePod("default", "running-0");
  EXPECT_TRUE(Eventually([&] { return d.FreeOn("gpu-node-000") == 8; }));
  EXPECT_TRUE(d.h().state().With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// A real API server ends every watch after the client's timeoutSeconds (300, as topogangd asks):
// a clean end, whole events then the stream's end. topogangd watches again from the last
// resourceVersion it saw, so no event is lost and nothing is listed again: here the watches end
// every 100 ms while pods come and go and a node is cordoned.
TEST(KubeSyncTest, WatchesTheApiServerEndsResumeWithoutARelistOrALostEvent) {
  FakeApiServer api;
  api.SetWatchTimeouts(/*time_scale=*/3000);  // 300 s of cluster time: 100 ms
  AddNodes(api, 4);
  KubeDaemon d(api);
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  const int node_lists = api.lists("nodes"), pod_lists = api.lists("pods");
  const int pod_watches = api.watches("pods");
  // Pods of 1 GPU come one by one, each deleted four pods later: the last four, one per node,
  // stay.
  for (int i = 0; i < 60; ++i) {
    api.PutPod(BoundPod(absl::StrCat("p-", i), absl::StrFormat("gpu-node-%03d", i % 4), 1));
    if (i >= 4) api.DeletePod("default", absl::StrCat("p-", i - 4));
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(CordonAndSee(api, d, 1));
  for (int n = 0; n < 4; ++n) {
    const std::string node = absl::StrFormat("gpu-node-%03d", n);
    EXPECT_TRUE(Eventually([&] { return d.FreeOn(node) == 7; })) << node << ": " << d.FreeOn(node);
  }
  EXPECT_GE(api.timed_out_watches(), 10);
  EXPECT_GE(api.watches("pods"), pod_watches + 5);
  EXPECT_EQ(d.sync().relists(), 0);
  EXPECT_EQ(api.lists("nodes"), node_lists);
  EXPECT_EQ(api.lists("pods"), pod_lists);
  EXPECT_TRUE(d.h().state().With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// A GPU pool's taint (GKE's nvidia.com/gpu=present:NoSchedule) is for pods to tolerate, not a
// broken node: the node stays healthy, and kube-scheduler filters the pods that do not tolerate
// it. Label churn that does not touch the tiers (GPU Feature Discovery) never rebuilds the model.
// Pods deleted while the watch is down (between a 410 and the relist) are in no event: their
// absence from the relist is their deletion, as client-go's Replace reports it
// (client-go/tools/cache/delta_fifo.go, DeletedFinalStateUnknown). A pending gang whose pods went
// that way gives its reservation back at once, not after its TTL (10 minutes here), and a gang
// waiting in the queue for room leaves the queue instead of being started for pods that are gone.
TEST(KubeSyncTest, PodsDeletedWhileTheWatchWasDownAreDeletedAtTheRelist) {
  FakeApiServer api;
  AddNodes(api, 2);
  api.PutPod(BoundPod("running-0", "gpu-node-000", 8));
  KubeDaemon d(api, absl::Seconds(10), /*reservation_ttl=*/absl::Minutes(10));
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  ASSERT_TRUE(api.WaitFor([&] { return api.open_watches() == 2; }));
  std::vector<std::string> names = NodeNames(2);
  Json g0 = MakePod(GangPod("g", 2, 0, 4)), g1 = MakePod(GangPod("g", 2, 1, 4));
  Json w0 = MakePod(GangPod("w", 2, 0, 8)), w1 = MakePod(GangPod("w", 2, 1, 8));
  for (const Json& p : {g0, g1, w0, w1}) api.PutPod(p);
  ASSERT_TRUE(Eventually([&] {  // the watch has shown all four
    return !Filter1(d.h(), g0, names).empty();
  }));
  EXPECT_EQ(d.FreeOn("gpu-node-001"), 0) << "g's 2 x 4 GPUs reserved there";
  EXPECT_EQ(Filter1(d.h(), w0, names), "") << "w (2 x 8) waits for room";
  ASSERT_EQ(d.h().ledger().GetStats().reserved_gangs, 1);

  std::atomic<bool> deleted{false};
  api.SetListHook([&](const std::string& kind) {
    if (kind != "pods" || deleted.exchange(true)) return;
    for (const char* pod : {"g-0", "g-1", "w-0", "w-1", "running-0"}) api.DeletePod("default", pod);
  });
  const int relists = d.sync().relists();
  const int node_lists = api.lists("nodes"), pod_lists = api.lists("pods");
  const int64_t before = d.h().state().WaitEvents(0, absl::Now()).back().seq;
  api.Compact();
  ASSERT_TRUE(Eventually([&] { return d.sync().relists() >= relists + 2 && deleted; }));
  ASSERT_TRUE(api.WaitFor([&] { return api.open_watches() == 2; }));
  // Each watch relists its own kind, as each client-go reflector does: a pod list taken for the
  // node watch could be applied after the live pod watch had moved past it.
  EXPECT_EQ(api.lists("nodes") - node_lists, 1);
  EXPECT_EQ(api.lists("pods") - pod_lists, 1);
  EXPECT_TRUE(Eventually([&] {
    return d.FreeOn("gpu-node-000") == 8 && d.FreeOn("gpu-node-001") == 8 &&
           d.h().ledger().GetStats().reserved_gangs == 0;
  })) << "free "
      << d.FreeOn("gpu-node-000") << " + " << d.FreeOn("gpu-node-001") << ", reserved gangs "
      << d.h().ledger().GetStats().reserved_gangs;
  // Both nodes free: had w stayed in the queue, the next pass would start it here.
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(d.FreeOn("gpu-node-000") + d.FreeOn("gpu-node-001"), 16);
  EXPECT_EQ(d.h().ledger().GetStats().reserved_gangs, 0);
  for (const DecisionEvent& ev : d.h().state().WaitEvents(before, absl::Now())) {
    // g may be planned again first (the node watch's relist rebuilds before the pod watch's).
    EXPECT_TRUE(ev.kind == "release" || (ev.kind == "replan" && ev.gang == "default/g"))
        << ev.kind << " " << ev.gang << ": " << ev.detail;
  }
}

TEST(KubeSyncTest, GpuPoolTaintsLeaveNodesUsableAndOtherLabelsDoNotRebuild) {
  FakeApiServer api;
  AddNodes(api, 4);
  KubeDaemon d(api);
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return d.Nodes() == 4; }));
  const int64_t rebuilds = d.sync().rebuilds();
  Json n1 = MakeNode("gpu-node-001", 8, Labels(1));
  n1["spec"]["taints"] =
      Json::parse(R"([{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}])");
  n1["metadata"]["labels"]["nvidia.com/gpu.memory"] = "81559";  // GFD's kind of label
  api.PutNode(n1);
  Json probe = MakeNode("gpu-node-002", 8, Labels(2));
  probe["spec"]["unschedulable"] = true;  // applied after n1: once it shows, n1 was applied too
  api.PutNode(probe);
  EXPECT_TRUE(Eventually([&] {
    return d.h().state().NodeHealthSources("gpu-node-002") &
           static_cast<uint8_t>(HealthSource::kKubeCordon);
  }));
  EXPECT_EQ(d.h().state().NodeHealthSources("gpu-node-001"), 0);
  absl::SleepFor(absl::Milliseconds(400));  // past the rebuild quiet period
  EXPECT_EQ(d.sync().rebuilds(), rebuilds);
  // A tier label does rebuild.
  Json moved = MakeNode("gpu-node-003", 8, Labels(7));  // another rack
  api.PutNode(moved);
  EXPECT_TRUE(Eventually([&] { return d.sync().rebuilds() > rebuilds; }));
}

TEST(KubeSyncTest, NodeBurstsAreFoldedIntoOneRebuildAndDeletionsActAtOnce) {
  FakeApiServer api;
  AddNodes(api, 4);
  api.PutPod(BoundPod("running-0", "gpu-node-000", 8));
  KubeDaemon d(api);
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  ASSERT_TRUE(api.WaitFor([&] { return api.open_watches() == 2; }));
  const int64_t before = d.sync().rebuilds();
  // An autoscaler adds 60 nodes in a burst: one model rebuild (or very few), not 60.
  for (int i = 4; i < 64; ++i) {
    api.PutNode(MakeNode(absl::StrFormat("gpu-node-%03d", i), 8, Labels(i)));
  }
  ASSERT_TRUE(Eventually([&] { return d.Nodes() == 64; }));
  EXPECT_LE(d.sync().rebuilds() - before, 3) << "each node event rebuilt the model";
  // The node count shows the new model as soon as it replaces the old one, a moment before the
  // bound pods are adopted into it (filters wait for both: the ledger's lock covers the rebuild).
  EXPECT_TRUE(Eventually([&] { return d.FreeOn("gpu-node-000") == 0; }))
      << "bound pods keep their GPUs across the rebuild";
  // A deleted node is unhealthy at once (nothing is steered to it), and leaves the model later.
  api.DeleteNode("gpu-node-010");
  EXPECT_TRUE(Eventually([&] {
    return d.h().state().NodeHealthSources("gpu-node-010") &
           static_cast<uint8_t>(HealthSource::kKubeNotReady);
  }));
  EXPECT_TRUE(Eventually([&] { return d.Nodes() == 63; }));
  EXPECT_TRUE(d.h().state().With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// topogangd names itself to the API server (User-Agent "topogangd/<version> ..."), so the fake
// API server can lag its watch alone (FakeApiServer::SetWatchLag): a deleted pod's GPUs stay
// taken in topogangd's model for the lag, then free.
TEST(KubeSyncTest, TopogangdsWatchAloneIsLaggedByItsUserAgent) {
  FakeApiServer api;
  AddNodes(api, 2);
  api.PutPod(BoundPod("running-0", "gpu-node-000", 8));
  api.SetWatchLag("topogangd/", absl::Milliseconds(300));
  KubeDaemon d(api);
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  EXPECT_TRUE(Eventually([&] { return d.FreeOn("gpu-node-000") == 0; }));
  // Both watches open, so the deletion below is a live event on them, not a replay at opening.
  ASSERT_TRUE(api.WaitFor([&] { return api.open_watches() == 2; }));
  api.DeletePod("default", "running-0");
  const absl::Time deleted = absl::Now();
  ASSERT_TRUE(Eventually([&] { return d.FreeOn("gpu-node-000") == 8; }));
  EXPECT_GE(absl::Now() - deleted, absl::Milliseconds(300)) << "topogangd's watch was not lagged";
}

TEST(KubeSyncTest, GangBindsThroughTheBindingSubresourceAndEmitsEvents) {
  FakeApiServer api;
  AddNodes(api, 4);
  KubeDaemon d(api, absl::Milliseconds(300));
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  std::vector<std::string> names = NodeNames(4);
  Json g0 = MakePod(GangPod("g", 2, 0, 8)), g1 = MakePod(GangPod("g", 2, 1, 8));
  api.PutPod(g0);
  api.PutPod(g1);
  std::string n0 = Filter1(d.h(), g0, names), n1 = Filter1(d.h(), g1, names);
  ASSERT_FALSE(n0.empty());
  ASSERT_FALSE(n1.empty());
  auto b0 = BindAsync(d.h(), g0, n0), b1 = BindAsync(d.h(), g1, n1);
  EXPECT_EQ(b0.get().body, R"({"Error":""})");
  EXPECT_EQ(b1.get().body, R"({"Error":""})");
  ASSERT_EQ(api.bindings().size(), 2u);
  EXPECT_EQ(api.GetPod("default", "g-0")["spec"]["nodeName"], n0);
  EXPECT_EQ(api.bindings()[0]["target"]["kind"], "Node");
  // Each member carries its rank in topology order and the gang's size, set by the binding.
  std::set<std::string> ranks;
  for (const char* name : {"g-0", "g-1"}) {
    const Json a = api.GetPod("default", name)["metadata"]["annotations"];
    EXPECT_EQ(a.value("topogang.io/world-size", ""), "2") << name;
    ranks.insert(a.value("topogang.io/rank", ""));
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"}));
  EXPECT_TRUE(api.WaitFor([&] {
    for (const Json& e : api.events())
      if (e.value("reason", "") == "GangReserved") return true;
    return false;
  }));

  // A gang that stops making progress expires after the reservation TTL (500 ms here): one
  // Event on a waiting pod.
  Json h0 = MakePod(GangPod("h", 2, 0, 8));
  api.PutPod(h0);
  std::string m0 = Filter1(d.h(), h0, names);
  ASSERT_FALSE(m0.empty());
  auto r = BindAsync(d.h(), h0, m0).get();
  EXPECT_NE(r.body.find("to reach bind"), std::string::npos) << r.body;
  EXPECT_TRUE(api.WaitFor([&] {
    for (const Json& e : api.events()) {
      if (e.value("reason", "") == "GangExpired" && e["involvedObject"]["name"] == "h-0" &&
          e["type"] == "Warning")
        return true;
    }
    return false;
  }));
  EXPECT_EQ(api.bindings().size(), 2u);

  // Bound elsewhere is an error, bound to the same node is success.
  KubeConfig kc;
  kc.server = api.url();
  KubeBinder binder(std::make_shared<KubeClient>(kc));
  EXPECT_TRUE(binder.Bind({"g-0", "default", "uid-g-0", n0}).ok());
  absl::Status conflict = binder.Bind({"g-0", "default", "uid-g-0", "gpu-node-999"});
  EXPECT_EQ(conflict.code(), absl::StatusCode::kAlreadyExists) << conflict;
  EXPECT_NE(conflict.message().find("already assigned"), std::string::npos);
}

// Bind only what was asked: the binder reads the pod first and binds it only if the API server
// shows it pending, with the UID and the scheduler name topogang saw at filter.
TEST(KubeBinderTest, RefusesPodsTheApiServerDoesNotShowPendingForThisScheduler) {
  FakeApiServer api;
  KubeConfig kc;
  kc.server = api.url();
  KubeBinder binder(std::make_shared<KubeClient>(kc));
  auto pod = [](const std::string& name, const std::string& scheduler) {
    PodOpts o;
    o.name = name;
    o.gpus = 8;
    Json p = MakePod(o);
    p["spec"]["schedulerName"] = scheduler;
    return p;
  };
  api.PutPod(pod("mine", "topogang-scheduler"));
  api.PutPod(pod("theirs", "default-scheduler"));
  Json going = pod("going", "topogang-scheduler");
  going["metadata"]["deletionTimestamp"] = "2026-11-24T00:00:00Z";
  api.PutPod(going);

  absl::Status missing = binder.Bind({"ghost", "default", "uid-ghost", "n1", "topogang-scheduler"});
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  absl::Status foreign =
      binder.Bind({"theirs", "default", "uid-theirs", "n1", "topogang-scheduler"});
  EXPECT_EQ(foreign.code(), absl::StatusCode::kFailedPrecondition) << foreign;
  EXPECT_NE(foreign.message().find("default-scheduler"), std::string::npos) << foreign;
  absl::Status replaced = binder.Bind({"mine", "default", "uid-other", "n1", "topogang-scheduler"});
  EXPECT_EQ(replaced.code(), absl::StatusCode::kNotFound)
      << replaced << " (the pod filtered is gone: the ledger gives its slot back on NotFound)";
  EXPECT_NE(replaced.message().find("UID"), std::string::npos) << replaced;
  absl::Status deleting =
      binder.Bind({"going", "default", "uid-going", "n1", "topogang-scheduler"});
  EXPECT_EQ(deleting.code(), absl::StatusCode::kFailedPrecondition) << deleting;
  EXPECT_TRUE(api.bindings().empty()) << "nothing refused reached the binding subresource";

  EXPECT_TRUE(binder.Bind({"mine", "default", "uid-mine", "n1", "topogang-scheduler"}).ok());
  EXPECT_EQ(api.GetPod("default", "mine")["spec"]["nodeName"], "n1");
  EXPECT_TRUE(binder.Bind({"mine", "default", "uid-mine", "n1", "topogang-scheduler"}).ok())
      << "a retry of a binding that went through";
  EXPECT_EQ(api.bindings().size(), 1u);
}

// The pod goes between the binder's read and its binding: deleted (the POST is a 404), or
// deleted and recreated under its name (the binding's UID precondition fails: a 409). Either way
// the pod that was filtered is gone, and NotFound is what makes the ledger give its slot back.
TEST(KubeBinderTest, APodDeletedOrReplacedBetweenTheReadAndTheBindingIsNotFound) {
  FakeApiServer api;
  KubeConfig kc;
  kc.server = api.url();
  KubeBinder binder(std::make_shared<KubeClient>(kc));
  PodOpts o;
  o.gpus = 8;
  for (const char* name : {"deleted", "replaced", "kept"}) {
    o.name = name;
    api.PutPod(MakePod(o));
  }
  api.SetBindingHook([&](const std::string& ns, const std::string& name) {
    if (name == "kept") return;
    api.DeletePod(ns, name);
    if (name == "replaced") {
      PodOpts again = o;
      again.name = name;
      again.uid = "uid-replaced-again";
      api.PutPod(MakePod(again));
    }
  });
  absl::Status deleted = binder.Bind({"deleted", "default", "uid-deleted", "n1"});
  EXPECT_EQ(deleted.code(), absl::StatusCode::kNotFound) << deleted;
  absl::Status replaced = binder.Bind({"replaced", "default", "uid-replaced", "n1"});
  EXPECT_EQ(replaced.code(), absl::StatusCode::kNotFound) << replaced;
  EXPECT_TRUE(api.GetPod("default", "replaced")["spec"]["nodeName"].is_null())
      << "the new pod under the old name was bound";
  EXPECT_TRUE(binder.Bind({"kept", "default", "uid-kept", "n1"}).ok());
  EXPECT_EQ(api.bindings().size(), 1u);
}

// Gang preemption end to end: the preemptor's filter picks one whole low-priority gang, evicts it
// through the Eviction subresource (dry runs first), the API server's DELETED events free its
// GPUs, and the preemptor is placed there. A PodDisruptionBudget over the victims blocks it with
// nothing evicted and a Warning event.
TEST(KubeSyncTest, GangPreemptionEvictsWholeGangsThroughTheApiServer) {
  for (bool budget : {false, true}) {
    FakeApiServer api;
    AddNodes(api, 8);  // two racks of four
    if (budget) api.AddDisruptionBudget("default", {{"tier", "low"}}, 0);
    KubeDaemon d(api);
    ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
    ASSERT_TRUE(Eventually([&] { return d.Nodes() == 8; }));
    const std::vector<std::string> names = NodeNames(8);
    auto pod = [](const std::string& gang, int i, int priority) {
      PodOpts o = GangPod(gang, 4, i, 8);
      o.annotations["topogang.io/required-tier"] = "rack";
      if (priority == 0) o.labels["tier"] = "low";
      Json p = MakePod(o);
      p["spec"]["priority"] = priority;
      return p;
    };
    for (const char* g : {"lo-a", "lo-b"}) {
      std::vector<pplx::task<testing::Reply>> binds;
      for (int i = 0; i < 4; ++i) {
        Json p = pod(g, i, 0);
        api.PutPod(p);
        const std::string n = Filter1(d.h(), p, names);
        ASSERT_FALSE(n.empty()) << g << i;
        binds.push_back(BindAsync(d.h(), p, n));
      }
      for (auto& b : binds) EXPECT_EQ(b.get().body, R"({"Error":""})");
    }
    ASSERT_EQ(api.bindings().size(), 8u);
    Json hi0 = pod("hi", 0, 100);
    api.PutPod(hi0);
    EXPECT_EQ(Filter1(d.h(), hi0, names), "");
    if (budget) {
      EXPECT_TRUE(api.WaitFor([&] {
        for (const Json& e : api.events()) {
          if (e.value("reason", "") == "GangPreemptionBlocked") return true;
        }
        return false;
      }));
      EXPECT_TRUE(api.evictions().empty());
      EXPECT_EQ(api.eviction_dry_runs(), 0) << "the first victim pod was refused";
      continue;
    }
    ASSERT_TRUE(api.WaitFor([&] { return api.evictions().size() == 4; }));
    std::set<std::string> victims;
    for (const std::string& e : api.evictions()) victims.insert(e.substr(8, 4));  // default/lo-x
    EXPECT_EQ(victims.size(), 1u) << "one whole gang";
    EXPECT_EQ(api.eviction_dry_runs(), 4);
    // The DELETED events free the rack; the preemptor's members are placed and bound there.
    std::vector<pplx::task<testing::Reply>> binds;
    ASSERT_TRUE(Eventually([&] { return !Filter1(d.h(), hi0, names).empty(); }));
    for (int i = 0; i < 4; ++i) {
      Json p = pod("hi", i, 100);
      if (i > 0) api.PutPod(p);
      const std::string n = Filter1(d.h(), p, names);
      ASSERT_FALSE(n.empty()) << i;
      binds.push_back(BindAsync(d.h(), p, n));
    }
    for (auto& b : binds) EXPECT_EQ(b.get().body, R"({"Error":""})");
    EXPECT_EQ(api.bindings().size(), 12u);
  }
}

// `topogang drain` is kept on the Node (an annotation), so the next leader, or this one after a
// restart, still has the node drained; undrain removes it. A GPU fault survives a model rebuild.
TEST(KubeSyncTest, DrainsSurviveARestartAndGpuFaultsARebuild) {
  FakeApiServer api;
  AddNodes(api, 4);
  {
    KubeDaemon a(api);
    ASSERT_TRUE(a.sync().WaitSynced(absl::Seconds(10)));
    ASSERT_TRUE(Eventually([&] { return a.Nodes() == 4; }));
    ASSERT_TRUE(a.h().state().SetAdminDrain("gpu-node-002", true, "cable swap").ok());
    ASSERT_TRUE(a.drains().WaitIdle(absl::Seconds(10)));
    EXPECT_EQ(api.GetNode("gpu-node-002")["metadata"]["annotations"]["topogang.io/drain"],
              "cable swap");
    // A GPU fault, then a rebuild (a new node): the fault is still applied.
    ASSERT_TRUE(a.h().state().SetGpuHealth("gpu-node-001", 3, true, "xid 79").ok());
    const int64_t rebuilds = a.sync().rebuilds();
    api.PutNode(MakeNode("gpu-node-004", 8, Labels(4)));
    ASSERT_TRUE(Eventually([&] { return a.sync().rebuilds() > rebuilds && a.Nodes() == 5; }));
    EXPECT_EQ(a.FreeOn("gpu-node-001"), 8);
    EXPECT_EQ(a.h().state().With([](GangScheduler& s) {
      const Cluster& c = s.cluster();
      return c.NodeFreeHealthy(c.FindNode("gpu-node-001"));
    }),
              7);
    // The drain annotation coming back through the watch does not undo anything either.
    EXPECT_TRUE(a.h().state().NodeHealthSources("gpu-node-002") &
                static_cast<uint8_t>(HealthSource::kAdminDrain));
  }
  KubeDaemon b(api);  // the restart (or the standby taking over)
  ASSERT_TRUE(b.sync().WaitSynced(absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] {
    return (b.h().state().NodeHealthSources("gpu-node-002") &
            static_cast<uint8_t>(HealthSource::kAdminDrain)) != 0;
  }));
  EXPECT_NE(b.h().state().NodeHealthReason("gpu-node-002").find("cable swap"), std::string::npos);
  ASSERT_TRUE(b.h().state().SetAdminDrain("gpu-node-002", false, "").ok());
  ASSERT_TRUE(b.drains().WaitIdle(absl::Seconds(10)));
  EXPECT_FALSE(
      api.GetNode("gpu-node-002")["metadata"].contains("annotations") &&
      api.GetNode("gpu-node-002")["metadata"]["annotations"].contains("topogang.io/drain"));
  EXPECT_EQ(b.h().state().NodeHealthSources("gpu-node-002"), 0);
}

TEST(KubeSyncTest, RestartInTheMiddleOfAGang) {
  FakeApiServer api;
  AddNodes(api, 4);
  api.PutPod(BoundPod("done-0", "gpu-node-000", 8));  // an earlier job, still running
  std::vector<std::string> names = NodeNames(4);
  Json g0 = MakePod(GangPod("g", 3, 0, 8)), g1 = MakePod(GangPod("g", 3, 1, 8)),
       g2 = MakePod(GangPod("g", 3, 2, 8));
  for (const Json* p : {&g0, &g1, &g2}) api.PutPod(*p);
  pplx::task<testing::Reply> held;
  {
    KubeDaemon a(api);
    ASSERT_TRUE(a.sync().WaitSynced(absl::Seconds(10)));
    std::string n0 = Filter1(a.h(), g0, names);
    ASSERT_FALSE(n0.empty());
    EXPECT_NE(n0, "gpu-node-000");
    held = BindAsync(a.h(), g0, n0);
    // The bind must have reached the barrier (not merely been sent) before A goes away.
    ASSERT_TRUE(Eventually([&] { return a.h().ledger().GetStats().held_binds == 1; }));
    EXPECT_FALSE(held.is_done());
  }  // daemon A goes away with one member held at the barrier
  testing::Reply r = held.get();
  auto res = ParseBindingResult(r.body);
  EXPECT_TRUE(r.status != 200 || (res.ok() && !res->error.empty())) << "the held bind fails";
  EXPECT_TRUE(api.bindings().empty()) << "nothing was bound: no partial gang";

  KubeDaemon b(api);
  ASSERT_TRUE(b.sync().WaitSynced(absl::Seconds(10)));
  EXPECT_EQ(b.FreeOn("gpu-node-000"), 0) << "bound pods keep their GPUs across the restart";
  std::vector<pplx::task<testing::Reply>> binds;
  std::set<std::string> used;
  for (const Json* p : {&g0, &g1, &g2}) {
    std::string n = Filter1(b.h(), *p, names);
    ASSERT_FALSE(n.empty());
    EXPECT_NE(n, "gpu-node-000");
    used.insert(n);
    binds.push_back(BindAsync(b.h(), *p, n));
  }
  EXPECT_EQ(used.size(), 3u);
  for (auto& t : binds) EXPECT_EQ(t.get().body, R"({"Error":""})");
  EXPECT_EQ(api.bindings().size(), 3u);
  EXPECT_TRUE(Eventually([&] {
    return b.FreeOn("gpu-node-001") + b.FreeOn("gpu-node-002") + b.FreeOn("gpu-node-003") == 0;
  }));
  EXPECT_TRUE(b.h().state().With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// The daemon restarts while gang "g" (4 pods) is half bound and gang "full" (4 pods) is bound:
// both come back as ONE running gang each, g's two pending members are steered next to its bound
// ones and bind through the barrier, and deleting the pods gives every GPU back.
TEST(KubeSyncTest, RestartRegroupsBoundPodsIntoTheirGangs) {
  FakeApiServer api;
  AddNodes(api, 8);
  std::vector<std::string> names = NodeNames(8);
  auto bound = [](const std::string& gang, int i, const std::string& node) {
    Json p = MakePod(GangPod(gang, 4, i, 8));
    p["spec"]["nodeName"] = node;
    p["status"]["phase"] = "Running";
    return p;
  };
  for (int i = 0; i < 4; ++i) api.PutPod(bound("full", i, names[4 + i]));
  api.PutPod(bound("g", 0, "gpu-node-000"));
  api.PutPod(bound("g", 1, "gpu-node-001"));
  Json g2 = MakePod(GangPod("g", 4, 2, 8)), g3 = MakePod(GangPod("g", 4, 3, 8));
  api.PutPod(g2);
  api.PutPod(g3);

  KubeDaemon d(api);
  ASSERT_TRUE(d.sync().WaitSynced(absl::Seconds(10)));
  auto gangs = [&] {
    return d.h().state().With([](GangScheduler& s) {
      std::map<std::string, int> out;  // gang -> members holding GPUs
      for (const auto& [name, rec] : s.gangs()) {
        int n = 0;
        for (const MemberPlacement& m : rec.placement.members) n += m.node >= 0 ? 1 : 0;
        out[name] = n;
      }
      return out;
    });
  };
  EXPECT_EQ(gangs(), (std::map<std::string, int>{{"default/full", 4}, {"default/g", 2}}));

  std::string n2 = Filter1(d.h(), g2, names), n3 = Filter1(d.h(), g3, names);
  EXPECT_EQ((std::set<std::string>{n2, n3}),
            (std::set<std::string>{"gpu-node-002", "gpu-node-003"}))
      << "the missing members go next to the bound ones (their rack)";
  auto b2 = BindAsync(d.h(), g2, n2), b3 = BindAsync(d.h(), g3, n3);
  EXPECT_EQ(b2.get().body, R"({"Error":""})");
  EXPECT_EQ(b3.get().body, R"({"Error":""})");
  EXPECT_EQ(api.bindings().size(), 2u) << "only the missing members are bound";
  EXPECT_EQ(api.GetPod("default", "g-2")["spec"]["nodeName"], n2);
  // The watch reports the new bindings; nothing is adopted twice.
  EXPECT_TRUE(Eventually([&] {
    return api.GetPod("default", "g-3")["spec"]["nodeName"] == n3 &&
           d.h().ledger().GetStats().running_gangs == 2;
  }));
  EXPECT_EQ(gangs(), (std::map<std::string, int>{{"default/full", 4}, {"default/g", 4}}));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d.FreeOn(names[i]), 0) << names[i];
  EXPECT_TRUE(d.h().state().With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());

  // Pods go: each member's GPUs come back, the last one releases its gang.
  api.DeletePod("default", "g-0");
  EXPECT_TRUE(Eventually([&] { return d.FreeOn("gpu-node-000") == 8; }));
  EXPECT_EQ(gangs().at("default/g"), 3);
  for (int i = 1; i < 4; ++i) api.DeletePod("default", absl::StrCat("g-", i));
  for (int i = 0; i < 4; ++i) api.DeletePod("default", absl::StrCat("full-", i));
  EXPECT_TRUE(Eventually([&] { return gangs().empty(); }));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d.FreeOn(names[i]), 8) << names[i];
  EXPECT_TRUE(d.h().state().With([](GangScheduler& s) { return s.CheckInvariants(); }).ok());
}

// Drains and wakes share one writer: each is its own key of a merge patch, so neither clobbers
// the other (nor anyone else's annotations), and every wake is a new value (an unchanged
// annotation would be no event to kube-scheduler).
TEST(NodeAnnotationWriterTest, DrainsAndWakesAreMergePatchesOfTheirOwnKeys) {
  FakeApiServer api;
  AddNodes(api, 2);
  Json n0 = api.GetNode("gpu-node-000");
  n0["metadata"]["annotations"]["example.com/owner"] = "infra";
  api.PutNode(n0);
  KubeConfig kc;
  kc.server = api.url();
  NodeAnnotationWriter w(std::make_shared<KubeClient>(kc), absl::Milliseconds(10));
  w.RecordDrain("gpu-node-000", true, "cable swap");
  w.RecordWake("gpu-node-000", "team-a/llm");
  ASSERT_TRUE(w.WaitIdle(absl::Seconds(10)));
  Json a = api.GetNode("gpu-node-000")["metadata"]["annotations"];
  EXPECT_EQ(a["topogang.io/drain"], "cable swap");
  EXPECT_EQ(a["example.com/owner"], "infra");
  const std::string first = a["topogang.io/wake"].get<std::string>();
  EXPECT_TRUE(absl::EndsWith(first, " team-a/llm")) << first;
  absl::SleepFor(absl::Milliseconds(2));
  w.RecordWake("gpu-node-000", "team-a/llm");
  ASSERT_TRUE(w.WaitIdle(absl::Seconds(10)));
  a = api.GetNode("gpu-node-000")["metadata"]["annotations"];
  EXPECT_NE(a["topogang.io/wake"].get<std::string>(), first) << "the same value wakes nobody";
  EXPECT_EQ(a["topogang.io/drain"], "cable swap");
  // A node gone meanwhile: given up at once (404), the writer goes on.
  const int64_t written = w.written();
  w.RecordWake("gpu-node-009", "team-a/llm");
  w.RecordDrain("gpu-node-001", false, "");
  ASSERT_TRUE(w.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(w.written(), written + 1);
}

TEST(NodeAnnotationWriterTest, AWriteRefusedForGoodIsNotRetriedAndHoldsUpNothing) {
  // An admission webhook or RBAC that denies Node updates answers 4xx: retrying it (here every
  // hour) would keep a drain queued behind a wake waiting that long.
  FakeApiServer api;
  AddNodes(api, 2);
  api.RequireToken("not-ours");  // every request from the writer: 401
  KubeConfig kc;
  kc.server = api.url();
  NodeAnnotationWriter w(std::make_shared<KubeClient>(kc), absl::Hours(1));
  w.RecordWake("gpu-node-000", "team-a/llm");
  ASSERT_TRUE(w.WaitIdle(absl::Seconds(10))) << "a 401 was retried";
  EXPECT_EQ(w.written(), 0);
  api.RequireToken("");
  w.RecordDrain("gpu-node-001", true, "cable swap");
  ASSERT_TRUE(w.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(w.written(), 1);
  EXPECT_EQ(api.GetNode("gpu-node-001")["metadata"]["annotations"]["topogang.io/drain"],
            "cable swap");
}

}  // namespace
}  // namespace topogang
