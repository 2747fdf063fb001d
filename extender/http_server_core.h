// Internal to the extender's HTTP server (http_server.cc, http_session.h): the state the server
// object and its connections share, and the transport's fixed limits. Not for other includers.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "extender/http_routes.h"
#include "extender/http_server.h"
#include "extender/tls_reloader.h"

namespace topogang::http_internal {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kFirstRead = 2048;  // a bind request with its headers fits
constexpr size_t kReadBuffer = 64 * 1024;
constexpr size_t kReadBufferMax = 1024 * 1024;  // bytes read ahead of the parser, at most
// After an error reply on a connection we close, read (and drop) what the client still sends
// before closing, so it gets our reply instead of a reset. Bounded in bytes and time.
constexpr size_t kLingerBytes = 256u << 20;
constexpr auto kLingerTimeout = std::chrono::seconds(2);
constexpr int kHealthConnections = 64;  // the health port's own cap, apart from max_connections
constexpr auto kHandshakeLogEvery = std::chrono::seconds(60);

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void Close() = 0;  // from any thread
};

// State shared by the server object and its connections.
struct ServerCore {
  ServerCore(ExtenderService& service, const HttpServerOptions& options, DaemonMetrics* metrics,
             const HttpTransportOptions& t)
      : routes(service, options, metrics),
        max_body_bytes(options.max_body_bytes),
        max_inflight(t.max_inflight_body_bytes),
        idle_timeout(std::max(1, t.idle_timeout_ms)),
        read_timeout(std::max(1, t.read_timeout_ms)),
        write_timeout(std::max(1, t.write_timeout_ms)),
        log(t.log) {}

  ExtenderRoutes routes;
  const size_t max_body_bytes;
  const size_t max_inflight;
  const milliseconds idle_timeout, read_timeout, write_timeout;
  const std::function<void(const std::string&)> log;
  std::unique_ptr<TlsReloader> tls;  // set when serving HTTPS
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor, health_acceptor;
  std::vector<std::thread> threads;
  int max_connections = 16384;

  std::mutex mu;
  std::condition_variable cv;
  int pending_replies = 0;  // replies owed (requests read, answer not yet written)
  uint64_t next_id = 0;
  std::unordered_map<uint64_t, std::weak_ptr<SessionBase>> sessions;
  int verb_sessions = 0, health_sessions = 0;
  size_t inflight = 0;                    // body bytes reserved by requests being read or handled
  std::weak_ptr<ServerCore> shared_self;  // handed to new sessions
  int running_threads = 0;
  std::chrono::steady_clock::time_point last_handshake_log{};
  int handshake_failures_unlogged = 0;

  void Accept(tcp::acceptor& acc, bool health);
  void OweReply() {
    std::lock_guard<std::mutex> l(mu);
    ++pending_replies;
  }
  void ReplyDone() {
    std::lock_guard<std::mutex> l(mu);
    if (--pending_replies == 0) cv.notify_all();
  }
  bool Reserve(size_t bytes, size_t* total) {
    std::lock_guard<std::mutex> l(mu);
    *total = inflight;
    if (inflight + bytes > max_inflight) return false;
    inflight += bytes;
    return true;
  }
  void Release(size_t bytes) {
    std::lock_guard<std::mutex> l(mu);
    inflight -= bytes;
  }
  void Forget(uint64_t id, bool health) {
    std::lock_guard<std::mutex> l(mu);
    sessions.erase(id);
    --(health ? health_sessions : verb_sessions);
  }
  // A refused or broken handshake is a client's problem, but an operator debugging mTLS needs to
  // see one: at most one line a minute, with the count since the last.
  void HandshakeFailed(const beast::error_code& ec, const std::string& peer) {
    if (ec == beast::error::timeout || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted) {
      return;  // port scans, probes that only open a socket, shutdown
    }
    std::string line;
    {
      std::lock_guard<std::mutex> l(mu);
      const auto now = std::chrono::steady_clock::now();
      if (now - last_handshake_log < kHandshakeLogEvery) {
        ++handshake_failures_unlogged;
        return;
      }
      line = absl::StrCat(
          "TLS handshake from ", peer, " refused: ", ec.message(),
          handshake_failures_unlogged > 0
              ? absl::StrCat(" (", handshake_failures_unlogged, " more since the last report)")
              : "");
      last_handshake_log = now;
      handshake_failures_unlogged = 0;
    }
    log(line);
  }
};

}  // namespace topogang::http_internal
