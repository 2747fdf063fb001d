// The extender's HTTP/1.1 server: Boost.Beast over Asio, keep-alive, a few threads, requests
// handed whole to ExtenderRoutes.
//
// Why not cpprestsdk's http_listener (the first version): it moves request and reply bodies in
// hard-coded 4 KiB chunks, each through a PPL task continuation. A 12,500-name filter is a 152 KB
// request and a 560 KB reply, ~180 continuations: ~3.5 ms of overhead around ~1 ms of work, and
// ~300 requests/s on two cores (docs/benchmarks.md has both measurements). Beast reads the body
// into one buffer and writes the reply with one gathered write. cpprestsdk stays the Kubernetes
// API client.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "extender/extender_service.h"
#include "extender/http_routes.h"

namespace topogang {

namespace http_internal {
struct ServerCore;
}

class ExtenderHttpServer {
 public:
  // `metrics` (optional, see ExtenderRoutes) counts requests and is served at GET /metrics.
  ExtenderHttpServer(ExtenderService& service, HttpServerOptions options,
                     DaemonMetrics* metrics = nullptr);
  ~ExtenderHttpServer();

  absl::Status Start();
  // Stops accepting, fails held binds and lets their replies go out (bounded), closes every
  // connection and joins the threads. Idempotent.
  void Stop();
  void SetReady(bool ready);
  void SetLeader(bool leader);
  std::string BaseUrl() const;  // http://addr:port
  int port() const { return options_.port; }

 private:
  ExtenderService& service_;
  HttpServerOptions options_;
  std::shared_ptr<http_internal::ServerCore>
      core_;  // shared with connections, which may outlive Stop() briefly
};

}  // namespace topogang
