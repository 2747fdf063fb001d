// A real topogangd stack on loopback for integration tests: DaemonState + ExtenderService +
// ExtenderHttpServer on a free port, and an HTTP client that posts bodies the way
// kube-scheduler does (POST, Content-Type: application/json).
#pragma once

#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/free_port.h"
#include "daemon/metrics.h"
#include "extender/extender_service.h"
#include "extender/http_server.h"
#include "tests/support/test_util.h"

namespace topogang::testing {

struct Reply {
  int status = 0;
  std::string body;
};

class Harness {
 public:
  Harness(Cluster cluster, GangLedgerOptions eo = {}, HttpServerOptions ho = {},
          Binder* binder = nullptr, SchedulerOptions so = {})
      : state_(GangScheduler(std::move(cluster), so), clock_),
        metrics_(&state_),
        binder_(binder ? binder : &memory_),
        ledger_(state_, *binder_, eo),
        service_(ledger_) {
    metrics_.AttachLedger(&ledger_);
    metrics_.SetModelSynced(true);  // the model is the cluster given, as in standalone mode
    for (int attempt = 0; attempt < 20 && !server_; ++attempt) {
      ho.port = PickFreePort();
      ho.bind_address = "127.0.0.1";
      auto s = std::make_unique<ExtenderHttpServer>(service_, ho, &metrics_);
      if (s->Start().ok()) server_ = std::move(s);
    }
    prefix_ = ho.prefix;
    web::http::client::http_client_config cfg;
    cfg.set_timeout(std::chrono::seconds(30));
    client_ = std::make_unique<web::http::client::http_client>(server_->BaseUrl(), cfg);
  }
  ~Harness() {
    if (server_) server_->Stop();
  }

  pplx::task<Reply> PostAsync(const std::string& path, const std::string& body) {
    web::http::http_request req(web::http::methods::POST);
    req.set_request_uri(path);
    req.set_body(body, "application/json");
    req.headers().add("User-Agent", "Go-http-client/1.1");
    return client_->request(req).then([](web::http::http_response r) {
      return r.extract_utf8string(true).then([code = r.status_code()](std::string b) {
        return Reply{code, b};
      });
    });
  }
  Reply Post(const std::string& path, const std::string& body) {
    return PostAsync(path, body).get();
  }
  Reply Get(const std::string& path) {
    auto r = client_->request(web::http::methods::GET, path).get();
    return Reply{r.status_code(), r.extract_utf8string(true).get()};
  }

  DaemonState& state() { return state_; }
  ExtenderService& service() { return service_; }
  GangLedger& ledger() { return ledger_; }
  DaemonMetrics& metrics() { return metrics_; }
  ExtenderHttpServer& server() { return *server_; }
  MemoryBinder& memory() { return memory_; }
  bool ok() const { return server_ != nullptr; }
  int UsedGpus() {
    return state_.With(
        [](GangScheduler& s) { return s.cluster().num_gpus() - s.cluster().FreeHealthy(0); });
  }

 private:
  SystemClock clock_;
  DaemonState state_;
  DaemonMetrics metrics_;  // outlives the service (see ExtenderRoutes)
  MemoryBinder memory_;
  Binder* binder_;
  GangLedger ledger_;
  ExtenderService service_;
  std::unique_ptr<ExtenderHttpServer> server_;
  std::unique_ptr<web::http::client::http_client> client_;
  std::string prefix_;
};

// Starts the real build/bin/topogangd with `args` (argv[0] added) and waits until GET /healthz
// on 127.0.0.1:http_port answers 200. Returns the child's pid, or -1 when it never came up
// (the child is then killed).
inline pid_t StartTopogangd(const std::vector<std::string>& args, int http_port) {
  const std::string bin = BinDir() + "/topogangd";
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>("topogangd")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  web::http::client::http_client client("http://127.0.0.1:" + std::to_string(http_port));
  for (absl::Time deadline = absl::Now() + absl::Seconds(20); absl::Now() < deadline;) {
    try {
      if (client.request(web::http::methods::GET, "/healthz").get().status_code() == 200) {
        return pid;
      }
    } catch (...) {
      absl::SleepFor(absl::Milliseconds(20));  // the process is still starting
    }
  }
  kill(pid, SIGKILL);
  return -1;
}

// Waits for a topogangd started by StartTopogangd and checks that it exited 0.
inline void ExpectCleanExit(pid_t pid) {
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace topogang::testing
