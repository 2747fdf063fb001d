// Two real topogangd replicas in cluster mode against the fake API server: only the leader is
// ready; SIGTERM on the leader releases the lease (exit 0) and the standby becomes ready well
// within the lease duration; a leader cut off from the API server exits 1; the queue's
// seniority survives the handover.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/free_port.h"
#include "extender/http_server.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/harness.h"
#include "tests/support/prom_text.h"

namespace topogang {
namespace {

using testing::FakeApiServer;

int ReadyStatus(int port) {
  web::http::client::http_client client(absl::StrCat("http://127.0.0.1:", port));
  try {
    return client.request(web::http::methods::GET, "/readyz").get().status_code();
  } catch (...) {
    return -1;
  }
}

// The Error field of a filter reply ("" when it passed), or a marker when the call failed.
std::string FilterError(int port, const std::string& body) {
  web::http::client::http_client client(absl::StrCat("http://127.0.0.1:", port));
  try {
    auto r = client.request(web::http::methods::POST, "/filter", body, "application/json").get();
    return Json::parse(r.extract_utf8string(true).get()).value("Error", "<no Error field>");
  } catch (const std::exception& e) {
    return absl::StrCat("<request failed: ", e.what(), ">");
  }
}

// The nodes a filter reply passed, comma-separated; the Error text when it has one.
std::string FilterPassed(int port, const std::string& body) {
  web::http::client::http_client client(absl::StrCat("http://127.0.0.1:", port));
  try {
    auto r = client.request(web::http::methods::POST, "/filter", body, "application/json").get();
    Json reply = Json::parse(r.extract_utf8string(true).get());
    if (!reply.value("Error", "").empty()) return "error: " + reply.value("Error", "");
    std::string out;
    for (const Json& n : reply.value("NodeNames", Json::array())) {
      out += (out.empty() ? "" : ",") + n.get<std::string>();
    }
    return out;
  } catch (const std::exception& e) {
    return absl::StrCat("<request failed: ", e.what(), ">");
  }
}

// GET /metrics, parsed (an empty exposition when the call or the parse failed, so every value
// assertion fails).
testing::PromText Metrics(int port) {
  web::http::client::http_client client(absl::StrCat("http://127.0.0.1:", port));
  try {
    auto r = client.request(web::http::methods::GET, "/metrics").get();
    auto m = testing::PromText::Parse(r.extract_utf8string(true).get());
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : testing::PromText();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "GET /metrics: " << e.what();
    return testing::PromText();
  }
}

// Waits (bounded) for the child to exit; its exit status, or -1 when it is still running.
int WaitExit(pid_t pid, absl::Duration timeout) {
  for (absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    absl::SleepFor(absl::Milliseconds(20));  // polling a child process, bounded
  }
  return -1;
}

class Replicas : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("topogang-leader-", ::getpid(), "-", rand());
    std::filesystem::create_directories(dir_);
    api_.PutNode(testing::MakeNode("n1", 8, {}));
    WriteConfig();
  }
  // `daemon_keys`: more lines of the daemon section, each indented by two spaces.
  void WriteConfig(const std::string& daemon_keys = "") {
    // A long lease: a handover faster than it comes from the release, not from expiry.
    std::ofstream(dir_ / "config.yaml") << "topology: {preset: topograph}\ndaemon:\n"
                                        << daemon_keys << R"(  leader_election:
    lease_namespace: topogang-system
    lease_duration_ms: 20000
    renew_deadline_ms: 800
    retry_period_ms: 50
)";
  }
  void TearDown() override {
    for (pid_t p : pids_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  // A replica with its own kubeconfig token, so the fake server can cut it off alone.
  pid_t Start(const std::string& name, int port) {
    const std::string kubeconfig = (dir_ / (name + ".kubeconfig")).string();
    std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                              << "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                              << "clusters: [{name: k, cluster: {server: '" << api_.url()
                              << "'}}]\nusers: [{name: u, user: {token: token-" << name << "}}]\n";
    setenv("POD_NAME", name.c_str(), 1);
    pid_t pid = testing::StartTopogangd(
        {"--kubeconfig", kubeconfig, "--config", (dir_ / "config.yaml").string(), "--http-port",
         std::to_string(port), "--bind-address", "127.0.0.1"},
        port);
    unsetenv("POD_NAME");
    if (pid > 0) pids_.push_back(pid);
    return pid;
  }
  void Forget(pid_t pid) { std::erase(pids_, pid); }

  std::string Holder() {
    Json l = api_.GetLease("topogang-system", "topogangd");
    return l.is_object() ? l["spec"].value("holderIdentity", "") : "";
  }

  FakeApiServer api_;
  std::filesystem::path dir_;
  std::vector<pid_t> pids_;
};

TEST_F(Replicas, OnlyTheLeaderIsReadyReleaseHandsOverLossExits1) {
  const int port_a = PickFreePort();
  pid_t a = Start("replica-a", port_a);
  ASSERT_GT(a, 0);
  ASSERT_TRUE(api_.WaitFor([&] { return ReadyStatus(port_a) == 200; }));
  EXPECT_EQ(Holder().rfind("replica-a_", 0), 0u) << Holder();

  const int port_b = PickFreePort();
  pid_t b = Start("replica-b", port_b);
  ASSERT_GT(b, 0);
  // b lists and watches (warm standby) but is not ready: it does not hold the lease.
  ASSERT_TRUE(api_.WaitFor([&] { return api_.lists("nodes") >= 2; }));
  const int gets = api_.lease_requests("GET");
  ASSERT_TRUE(api_.WaitFor([&] { return api_.lease_requests("GET") >= gets + 10; }));
  EXPECT_EQ(ReadyStatus(port_b), 503);
  EXPECT_EQ(ReadyStatus(port_a), 200);
  // A verb that reaches the standby anyway is refused, never reserved.
  const std::string body =
      testing::FilterBody(testing::MakePod(testing::GangPod("g", 1, 0, 1)), {"n1"});
  EXPECT_TRUE(absl::StrContains(FilterError(port_b, body), "standby"));
  EXPECT_EQ(FilterError(port_a, body), "");
  // Metrics tell the two apart (cluster-mode wiring of main.cc).
  testing::PromText ma = Metrics(port_a), mb = Metrics(port_b);
  EXPECT_EQ(ma.Get("topogang_leader"), 1);
  EXPECT_EQ(ma.Get("topogang_ready"), 1);
  EXPECT_EQ(ma.Get("topogang_model_synced"), 1);
  EXPECT_EQ(ma.Get("topogang_extender_requests_total", {{"verb", "filter"}, {"result", "ok"}}), 1);
  EXPECT_EQ(mb.Get("topogang_leader"), 0);
  EXPECT_EQ(mb.Get("topogang_ready"), 0);
  EXPECT_EQ(mb.Get("topogang_extender_requests_total", {{"verb", "filter"}, {"result", "standby"}}),
            1);
  EXPECT_EQ(mb.Get("topogang_gang_events_total", {{"event", "reserve"}}), 0);

  // Graceful shutdown of the leader: lease released, b ready long before 20 s.
  const absl::Time term = absl::Now();
  kill(a, SIGTERM);
  EXPECT_EQ(WaitExit(a, absl::Seconds(10)), 0);
  Forget(a);
  ASSERT_TRUE(api_.WaitFor([&] { return ReadyStatus(port_b) == 200; }));
  EXPECT_LT(absl::Now() - term, absl::Seconds(10));
  EXPECT_EQ(Holder().rfind("replica-b_", 0), 0u) << Holder();
  EXPECT_EQ(api_.GetLease("topogang-system", "topogangd")["spec"]["leaseTransitions"], 1);

  // b loses the API server: after the renew deadline it stops and exits 1 (to restart clean).
  api_.SetLeaseOutage(FakeApiServer::Outage::kError, "token-replica-b");
  EXPECT_EQ(WaitExit(b, absl::Seconds(10)), 1);
  Forget(b);
}

// Queue seniority survives a failover (kube/queue_journal.h): the leader writes each waiting
// gang's arrival to a ConfigMap as it shuts down, and the next leader reads it before serving,
// so a gang that waited under the old leader stays ahead of one that asked the new leader first.
TEST_F(Replicas, AWaitingGangKeepsItsPlaceInTheQueueAcrossAFailover) {
  api_.PutNode(testing::MakeNode("n2", 8, {}));
  api_.PutPod(testing::RunningPod("busy", 8, "n1"));
  auto allocated = [](int port) {
    return Metrics(port).Get("topogang_gpus", {{"state", "allocated"}});
  };
  // The nodes passed for the first pod of a gang of two whole nodes.
  auto filter = [](int port, const std::string& gang, const std::vector<std::string>& offered) {
    return FilterPassed(
        port, testing::FilterBody(testing::MakePod(testing::GangPod(gang, 2, 0, 8)), offered));
  };
  const int port_a = PickFreePort();
  pid_t a = Start("replica-a", port_a);
  ASSERT_GT(a, 0);
  ASSERT_TRUE(api_.WaitFor([&] { return ReadyStatus(port_a) == 200 && allocated(port_a) == 8; }));
  EXPECT_EQ(filter(port_a, "old", {"n2"}), "") << "one node busy: it waits in a's queue";
  kill(a, SIGTERM);
  EXPECT_EQ(WaitExit(a, absl::Seconds(10)), 0);
  Forget(a);
  Json cm = api_.GetConfigMap("topogang-system", "topogangd-queue");
  ASSERT_TRUE(cm.is_object()) << "written at shutdown, before the lease was released";
  EXPECT_TRUE(absl::StrContains(cm["data"].value("arrivals", ""), "default/old"))
      << cm["data"].dump();

  const int port_b = PickFreePort();
  pid_t b = Start("replica-b", port_b);
  ASSERT_GT(b, 0);
  ASSERT_TRUE(api_.WaitFor([&] { return ReadyStatus(port_b) == 200 && allocated(port_b) == 8; }));
  // kube-scheduler retries its waiting pods in no particular order: the young gang asks the new
  // leader first, then the old one.
  EXPECT_EQ(filter(port_b, "young", {"n2"}), "");
  EXPECT_EQ(filter(port_b, "old", {"n2"}), "");
  api_.DeletePod("default", "busy");
  ASSERT_TRUE(api_.WaitFor([&] { return allocated(port_b) == 0; }));
  // Room for one of them: the old gang starts, whichever asks first.
  EXPECT_EQ(filter(port_b, "young", {"n1", "n2"}), "");
  EXPECT_NE(filter(port_b, "old", {"n1", "n2"}), "");
}

// The large gangs' overload (QueueOptions::large_in_order_overload_backlog) survives a failover
// too: the next leader keeps the share rule for the rest of the memory instead of starting "not
// overloaded", though no gang has asked it anything yet.
TEST_F(Replicas, TheLargeGangsOverloadSurvivesAFailover) {
  WriteConfig(
      "  hold_min_gpus: 16\n  large_gangs_in_order: true\n  large_in_order_min_share: 0.125\n"
      "  large_in_order_overload_backlog: 0.5\n");
  api_.PutNode(testing::MakeNode("n2", 8, {}));
  api_.PutPod(testing::RunningPod("busy", 8, "n1"));
  auto overload = [](int port) { return Metrics(port).Get("topogang_queue_large_overload"); };
  const int port_a = PickFreePort();
  pid_t a = Start("replica-a", port_a);
  ASSERT_GT(a, 0);
  ASSERT_TRUE(api_.WaitFor([&] { return ReadyStatus(port_a) == 200; }));
  EXPECT_EQ(overload(port_a), 0);
  // 16 GPUs wait, above half of the cluster's 16.
  EXPECT_EQ(FilterPassed(port_a, testing::FilterBody(
                                     testing::MakePod(testing::GangPod("big", 2, 0, 8)), {"n2"})),
            "");
  EXPECT_EQ(overload(port_a), 1);
  kill(a, SIGTERM);
  EXPECT_EQ(WaitExit(a, absl::Seconds(10)), 0);
  Forget(a);
  Json cm = api_.GetConfigMap("topogang-system", "topogangd-queue");
  ASSERT_TRUE(cm.is_object());
  EXPECT_TRUE(absl::StrContains(cm["data"].value("arrivals", ""), "\"large_overload_seen\":"))
      << cm["data"].dump();

  const int port_b = PickFreePort();
  pid_t b = Start("replica-b", port_b);
  ASSERT_GT(b, 0);
  ASSERT_TRUE(api_.WaitFor([&] { return ReadyStatus(port_b) == 200; }));
  EXPECT_EQ(overload(port_b), 1) << "the record, not a backlog: nothing has asked b yet";
}

TEST(TopogangdLeaderFlagsTest, BadFlagsAndStandaloneElectionAreRejected) {
  const std::string cluster = testing::SourceDir() + "/examples/clusters/lab-64.yaml";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--cluster", cluster, "--leader-elect=true"},
        std::vector<std::string>{"--cluster", cluster, "--leader-elect=yes"},
        std::vector<std::string>{"--in-cluster", "--lease-namespace", "Not_A_Label"}}) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<char*> argv{const_cast<char*>("topogangd")};
      for (const std::string& s : args) argv.push_back(const_cast<char*>(s.c_str()));
      argv.push_back(nullptr);
      execv((testing::BinDir() + "/topogangd").c_str(), argv.data());
      _exit(127);
    }
    EXPECT_EQ(WaitExit(pid, absl::Seconds(10)), 2) << args.back();
  }
}

}  // namespace
}  // namespace topogang
