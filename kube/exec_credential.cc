#include "kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"

extern char** environ;

namespace topogang {
namespace {

constexpr size_t kMaxStdout = 1 << 20;
constexpr size_t kMaxStderr = 4096;

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

absl::StatusOr<ExecToken> ParseExecCredential(absl::string_view json,
                                              absl::string_view api_version) {
  auto j = ParseJson(json);
  if (!j.ok()) return absl::InvalidArgumentError(absl::StrCat("output: ", j.status().message()));
  auto kind = JsonString(*j, "kind", "kind");
  if (!kind.ok()) return kind.status();
  if (*kind != "ExecCredential") {
    return absl::InvalidArgumentError(
        absl::StrCat("output: kind is \"", *kind, "\", want ExecCredential"));
  }
  auto version = JsonString(*j, "apiVersion", "apiVersion");
  if (!version.ok()) return version.status();
  if (!api_version.empty() && *version != api_version) {
    return absl::InvalidArgumentError(absl::StrCat("output: apiVersion is \"", *version,
                                                   "\", the kubeconfig asks for ", api_version));
  }
  auto status = JsonObject(*j, "status", "status");
  if (!status.ok()) return status.status();
  if (*status == nullptr) return absl::InvalidArgumentError("output: no status");
  auto token = JsonString(**status, "token", "status.token");
  if (!token.ok()) return token.status();
  if (token->empty()) {
    return absl::UnimplementedError(
        "output: no status.token (client certificates from exec plugins are not supported)");
  }
  ExecToken out{*token, std::nullopt};
  auto exp = JsonString(**status, "expirationTimestamp", "status.expirationTimestamp");
  if (!exp.ok()) return exp.status();
  if (!exp->empty()) {
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, *exp, &t, &err)) {
      return absl::InvalidArgumentError(
          absl::StrCat("output: status.expirationTimestamp \"", *exp, "\": ", err));
    }
    out.expires = t;
  }
  return out;
}

absl::StatusOr<ExecToken> RunExecPlugin(const ExecPlugin& plugin, absl::Duration timeout) {
  if (plugin.command.empty()) return absl::InvalidArgumentError("exec plugin: no command");
  std::vector<std::string> argv_s = {plugin.command};
  argv_s.insert(argv_s.end(), plugin.args.begin(), plugin.args.end());
  std::vector<std::string> env_s;
  for (char** e = environ; e && *e; ++e) env_s.emplace_back(*e);
  for (const auto& [k, v] : plugin.env) env_s.push_back(absl::StrCat(k, "=", v));
  env_s.push_back(absl::StrCat("KUBERNETES_EXEC_INFO={\"apiVersion\":\"", plugin.api_version,
                               "\",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}"));
  std::vector<char*> argv, envp;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (std::string& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);

  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    CloseFd(out[0]);
    CloseFd(out[1]);
    return absl::InternalError(absl::StrCat("exec plugin: pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, plugin.command.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  CloseFd(out[1]);
  CloseFd(err[1]);
  if (rc != 0) {
    CloseFd(out[0]);
    CloseFd(err[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("exec plugin ", plugin.command, ": cannot run: ", std::strerror(rc)));
  }
  std::string stdout_text, stderr_text;
  const absl::Time deadline = absl::Now() + timeout;
  bool timed_out = false;
  while (out[0] >= 0 || err[0] >= 0) {
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int left = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (poll(fds, 2, left) < 0 && errno != EINTR) break;
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? out[0] : err[0];
      if (fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) {
        CloseFd(fd);
        continue;
      }
      std::string& dst = i == 0 ? stdout_text : stderr_text;
      size_t cap = i == 0 ? kMaxStdout : kMaxStderr;
      dst.append(buf, std::min(static_cast<size_t>(n), cap - std::min(cap, dst.size())));
    }
  }
  CloseFd(out[0]);
  CloseFd(err[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string where = absl::StrCat("exec plugin ", plugin.command);
  const std::string tail = stderr_text.empty() ? "" : absl::StrCat(": ", stderr_text);
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(where, ": no answer within ", absl::FormatDuration(timeout), tail));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(
        absl::StrCat(where, ": ",
                     WIFEXITED(status) ? absl::StrCat("exit status ", WEXITSTATUS(status))
                                       : absl::StrCat("killed by signal ", WTERMSIG(status)),
                     tail));
  }
  auto cred = ParseExecCredential(stdout_text, plugin.api_version);
  if (!cred.ok()) {
    return absl::Status(cred.status().code(), absl::StrCat(where, ": ", cred.status().message()));
  }
  return cred;
}

}  // namespace topogang
