// The extender's HTTP/1.1 server: Boost.Beast over Asio, keep-alive, a few threads, requests
// handed whole to ExtenderRoutes. HTTPS (and mTLS) through Asio's OpenSSL streams when
// HttpTransportOptions names a certificate, reloaded on rotation (tls_reloader.h); every
// connection is bounded in time and body bytes (docs/security.md).
//
// Why not cpprestsdk's http_listener (the first version): it moves request and reply bodies in
// hard-coded 4 KiB chunks, each through a PPL task continuation. A 12,500-name filter is a 152 KB
// request and a 560 KB reply, ~180 continuations: ~3.5 ms of overhead around ~1 ms of work, and
// ~300 requests/s on two cores (docs/benchmarks.md has both measurements). Beast reads the body
// into one buffer and writes the reply with one gathered write. cpprestsdk stays the Kubernetes
// API client.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "extender/extender_service.h"
#include "extender/http_routes.h"
#include "extender/tls_context.h"

namespace topogang {

// How connections are carried and bounded (the verbs' own options are HttpServerOptions).
// docs/security.md explains the defaults.
struct HttpTransportOptions {
  TlsFiles tls;  // cert_file set: HTTPS only; client_ca_file set too: mTLS (certificate required)
  int tls_reload_interval_ms = 5000;  // the files are re-read this often; 0 = never
  // Between requests on a keep-alive connection. kube-scheduler's Go transport drops idle
  // connections after 90 s; waiting longer means the client, not us, closes them.
  int idle_timeout_ms = 120000;
  // From a request's first byte to its last (and a TLS handshake from accept): a client that
  // trickles a request (slow loris) is dropped then. kube-scheduler gives up after its
  // httpTimeout (5 s by default) anyway.
  int read_timeout_ms = 10000;
  int write_timeout_ms = 30000;  // one reply
  // Request bodies being read or handled at once, all connections together; a request that would
  // go over is answered 503 before its body is read. Bounds what 16,384 connections can pin.
  size_t max_inflight_body_bytes = 256u << 20;
  // -1: none. Else a plain-HTTP listener (same bind address; 0 = any free port) serving only
  // GET /healthz, /readyz and /metrics, for kubelet probes and Prometheus when mTLS is on.
  int health_port = -1;
  // Start-up notes, warnings and TLS reload errors; default: stderr with a "topogangd: " prefix.
  std::function<void(const std::string&)> log;
};

// Why plain HTTP on this address deserves a warning, or "" (loopback, or TLS configured).
std::string PlainHttpWarning(const std::string& bind_address, const TlsFiles& tls);

namespace http_internal {
struct ServerCore;
}

class ExtenderHttpServer {
 public:
  // `metrics` (optional, see ExtenderRoutes) counts requests and is served at GET /metrics.
  ExtenderHttpServer(ExtenderService& service, HttpServerOptions options,
                     DaemonMetrics* metrics = nullptr, HttpTransportOptions transport = {});
  ~ExtenderHttpServer();

  absl::Status Start();
  // Stops accepting, fails held binds and lets their replies go out (bounded), closes every
  // connection and joins the threads. Idempotent.
  void Stop();
  void SetReady(bool ready);
  void SetLeader(bool leader);
  std::string BaseUrl() const;  // http[s]://addr:port
  int port() const { return options_.port; }
  int health_port() const { return transport_.health_port; }  // after Start: the bound port
  // TLS reloads so far (after the first load), and changed files that did not load.
  int tls_reloads() const;
  int tls_reload_failures() const;

 private:
  ExtenderService& service_;
  HttpServerOptions options_;
  HttpTransportOptions transport_;
  std::shared_ptr<http_internal::ServerCore>
      core_;  // shared with connections, which may outlive Stop() briefly
};

}  // namespace topogang
