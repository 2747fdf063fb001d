// The real topogangd binary in cluster mode against an API server URL (test-only, header-only),
// for the gang scenario tests and the gang_e2e benchmark: writes a kubeconfig and a config file
// into a temporary directory, forks the binary with its stdout and stderr going to a log file
// there (one line per gang decision), and waits for /readyz. Also Pod JSON for gang members.
#pragma once

#include <cpprest/http_client.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/free_port.h"
#include "tests/kubesched/api_objects.h"

namespace topogang::kubesched::testing {

struct TopogangdOptions {
  std::string binary;   // path of the topogangd executable
  std::string api_url;  // e.g. FakeApiServer::url()
  int bind_window_ms = 4000;
  int bind_parallelism = 64;  // daemon.bind_parallelism (the shipped default)
  double reservation_ttl_seconds = 30;
  std::string topology = "{preset: topograph}";  // the config file's topology: value
  // More keys of the daemon: mapping, e.g. "spares: {per_domain: 1}".
  std::string daemon_extra = "";
  absl::Duration ready_timeout = absl::Seconds(30);
  int port = 0;  // the HTTP port; 0: a free one (a restart passes the old one)
};

class TopogangdProcess {
 public:
  TopogangdProcess() = default;
  TopogangdProcess(const TopogangdProcess&) = delete;
  TopogangdProcess& operator=(const TopogangdProcess&) = delete;
  ~TopogangdProcess() {
    Stop();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  absl::Status Start(const TopogangdOptions& o) {
    static int seq = 0;
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("topogangd-", getpid(), "-", seq++, "-", absl::ToUnixMicros(absl::Now()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "kubeconfig") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                       << "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                       << "clusters: [{name: k, cluster: {server: '" << o.api_url
                                       << "'}}]\nusers: [{name: u, user: {token: t}}]\n";
    std::ofstream(dir_ / "config.yaml")
        << "topology: " << o.topology << "\n"
        << "scheduler: {reservation_ttl_seconds: " << o.reservation_ttl_seconds << "}\n"
        << "daemon: {bind_window_ms: " << o.bind_window_ms
        << ", bind_parallelism: " << o.bind_parallelism
        << (o.daemon_extra.empty() ? "" : ", " + o.daemon_extra) << "}\n";
    port_ = o.port > 0 ? o.port : PickFreePort();
    const std::vector<std::string> args = {"topogangd",
                                           "--kubeconfig",
                                           (dir_ / "kubeconfig").string(),
                                           "--config",
                                           (dir_ / "config.yaml").string(),
                                           "--http-port",
                                           std::to_string(port_),
                                           "--bind-address",
                                           "127.0.0.1",
                                           "--leader-elect=false"};
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string log = log_path();
    // Only async-signal-safe calls between fork and exec: the parent has threads.
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
      execv(o.binary.c_str(), argv.data());
      _exit(127);
    }
    if (pid_ < 0) return absl::InternalError("fork failed");
    web::http::client::http_client client(url());
    for (absl::Time deadline = absl::Now() + o.ready_timeout; absl::Now() < deadline;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return absl::InternalError(absl::StrCat("topogangd exited (status ", status, "): ", Log()));
      }
      try {
        if (client.request(web::http::methods::GET, "/readyz").get().status_code() == 200) {
          return absl::OkStatus();
        }
      } catch (...) {
      }
      absl::SleepFor(absl::Milliseconds(20));  // still starting or syncing
    }
    Stop();
    return absl::DeadlineExceededError(
        absl::StrCat("topogangd did not become ready at ", url(), ": ", Log()));
  }

  // SIGTERM (held binds are answered, the process exits), SIGKILL after 10 s.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 1000; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // SIGKILL: a crash or an OOM kill; nothing is answered or cleaned up.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  std::string log_path() const { return (dir_ / "topogangd.log").string(); }
  // Everything topogangd wrote so far (stdout and stderr).
  std::string Log() const {
    std::ifstream in(log_path());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The last `lines` lines of the log ("" before topogangd wrote anything).
  std::string LogTail(int lines) const {
    std::string s = Log();
    if (s.empty()) return s;  // substr(1) below would throw, in the TearDown of a failed test
    size_t pos = s.size();
    for (int n = 0; n <= lines && pos > 0; ++n) {
      pos = s.rfind('\n', pos - 1);
      if (pos == std::string::npos) return s;
    }
    return s.substr(pos + 1);
  }
  // GET /stats: {"reserved_gangs":N,"running_gangs":N,"held_binds":N}.
  absl::StatusOr<Json> Stats() const {
    try {
      web::http::client::http_client client(url());
      auto resp = client.request(web::http::methods::GET, "/stats").get();
      if (resp.status_code() != 200) {
        return absl::UnavailableError(absl::StrCat("/stats: HTTP ", resp.status_code()));
      }
      Json j = Json::parse(resp.extract_utf8string(true).get(), nullptr, false);
      if (j.is_discarded()) return absl::InternalError("/stats: not JSON");
      return j;
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("/stats: ", e.what()));
    }
  }
  // reserved_gangs from /stats, -1 when it cannot be read.
  int ReservedGangs() const {
    auto s = Stats();
    return s.ok() ? s->value("reserved_gangs", -1) : -1;
  }
  pid_t pid() const { return pid_; }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A pending pod of `scheduler_name` asking for `gpus` nvidia.com/gpu (as a limit; the API
// server copies it to requests), in gang `gang` of `size` pods (no gang labels when empty).
// `spec` fields are merged into the pod's spec (nodeSelector, tolerations, ...).
inline Json GangPod(const std::string& name, const std::string& gang, int size, int gpus,
                    const Json& spec = Json::object(),
                    const std::string& scheduler_name = "topogang-scheduler") {
  Json labels = Json::object();
  if (!gang.empty()) {
    labels["topogang.io/gang"] = gang;
    labels["topogang.io/gang-size"] = std::to_string(size);
  }
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}, {"labels", labels}}},
      {"spec",
       {{"schedulerName", scheduler_name},
        {"containers",
         {{{"name", "main"},
           {"image", "trainer:1"},
           {"resources",
            {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}},
             {"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
      {"status", {{"phase", "Pending"}}}};
  for (const auto& [k, v] : spec.items()) pod["spec"][k] = v;
  return pod;
}

}  // namespace topogang::kubesched::testing
