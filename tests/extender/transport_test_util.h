// Helpers for the transport tests (tls_test.cc, transport_limits_test.cc): a server on 127.0.0.1
// with its log captured, a raw client socket with timeouts (a server bug fails a test, never
// hangs it), HTTP/1.1 response reading, and polling without fixed sleeps.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/daemon_state.h"
#include "daemon/gang_ledger.h"
#include "extender/extender_service.h"
#include "extender/http_server.h"
#include "tests/support/test_util.h"

namespace topogang::testing {

// Polls `done` every 5 ms for up to `limit`; true as soon as it holds.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct HttpResponse {
  int status = 0;  // 0: the connection ended (or timed out) first
  std::string head, body;
};

// Reads one response (Content-Length bodies) from `buf` refilled by `read(p, n)` (> 0: bytes).
inline HttpResponse ReadResponse(std::string& buf, const std::function<int(char*, size_t)>& read) {
  auto fill = [&] {
    char tmp[65536];
    int n = read(tmp, sizeof(tmp));
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    return true;
  };
  HttpResponse r;
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return r;
  }
  r.head = buf.substr(0, end);
  buf.erase(0, end + 4);
  if (r.head.size() < 12 || !absl::SimpleAtoi(r.head.substr(9, 3), &r.status)) r.status = -1;
  size_t len = 0;
  const std::string lower = absl::AsciiStrToLower(r.head);
  if (size_t cl = lower.find("content-length:"); cl != std::string::npos) {
    const size_t eol = lower.find("\r\n", cl);
    (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(lower.substr(cl + 15, eol - cl - 15)), &len);
  }
  while (buf.size() < len) {
    if (!fill()) return HttpResponse{};
  }
  r.body = buf.substr(0, len);
  buf.erase(0, len);
  return r;
}

// A blocking TCP client on 127.0.0.1 with 5 s send/receive timeouts.
class RawSocket {
 public:
  explicit RawSocket(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawSocket() { close(fd_); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  int fd() const { return fd_; }
  bool connected() const { return connected_; }

  bool Send(const std::string& data) {
    for (size_t off = 0; off < data.size();) {
      ssize_t n = send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  HttpResponse Read() {
    return ReadResponse(buf_,
                        [this](char* p, size_t n) { return static_cast<int>(recv(fd_, p, n, 0)); });
  }
  // True when the server closed the connection (EOF) before sending anything more.
  bool ClosedByServer() {
    if (!buf_.empty()) return false;
    char c;
    ssize_t n = recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }
  // Milliseconds until the server closes the connection (EOF or reset, anything it still sends
  // is dropped), or -1 if it is still open after `limit_ms`.
  int MillisUntilClosed(int limit_ms) {
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
    };
    for (;;) {
      const int left = limit_ms - elapsed();
      if (left <= 0) return -1;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) return -1;
      char tmp[4096];
      ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return elapsed();
      if (n < 0) return -1;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

inline std::string PostRequest(const std::string& path, const std::string& body,
                               const std::string& extra_headers = "") {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                      "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n",
                      extra_headers, "\r\n", body);
}

// A filter for a pod without GPUs on 8 nodes: answered at once, passes every node.
inline std::string CpuFilterBody() {
  PodOpts o;
  o.name = "cpu";
  o.gpus = 0;
  return FilterBody(MakePod(o), NodeNames(8));
}

// An ExtenderHttpServer on 127.0.0.1 (a port the kernel picks) over an 8-node cluster, with
// everything it logs kept for the test.
struct TransportServer {
  explicit TransportServer(HttpTransportOptions t, HttpServerOptions ho = {})
      : state(GangScheduler(TestCluster(8)), clock), ledger(state, binder, {}), service(ledger) {
    ho.port = 0;
    ho.bind_address = "127.0.0.1";
    t.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> l(mu);
      logs.push_back(line);
    };
    server = std::make_unique<ExtenderHttpServer>(service, ho, nullptr, std::move(t));
    started = server->Start();
  }
  bool HasLog(absl::string_view part) {
    std::lock_guard<std::mutex> l(mu);
    for (const std::string& line : logs) {
      if (absl::StrContains(line, part)) return true;
    }
    return false;
  }
  std::string Logs() {
    std::lock_guard<std::mutex> l(mu);
    return absl::StrJoin(logs, "\n");
  }

  SystemClock clock;
  DaemonState state;
  MemoryBinder binder;
  GangLedger ledger;
  ExtenderService service;
  std::mutex mu;
  std::vector<std::string> logs;
  std::unique_ptr<ExtenderHttpServer> server;
  absl::Status started;
};

}  // namespace topogang::testing
