#include "api/grpc_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/review_cache.h"
#include "common/file_util.h"
#include "scheduler/gpu_health_policy.h"

namespace topogang {

namespace {

// "host:port" / "[v6]:port" -> host (brackets dropped) and port (0 when absent or bad).
std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}
int PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) return 0;
  return port;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(const GrpcTlsOptions& t) {
  if (t.cert_file.empty() && t.key_file.empty()) {
    if (!t.client_ca_file.empty()) {
      return absl::InvalidArgumentError("mutual TLS (client CA) needs a server cert and key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (t.cert_file.empty() || t.key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a key file");
  }
  auto cert = ReadFileToString(t.cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadFileToString(t.key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!t.client_ca_file.empty()) {
    auto ca = ReadFileToString(t.client_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request =
        t.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                              : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcServer>> StartGrpcServer(DaemonState& state,
                                                            const GrpcServerOptions& options) {
  if (options.heartbeat_interval <= absl::ZeroDuration() ||
      options.heartbeat_window < options.heartbeat_interval) {
    return absl::InvalidArgumentError(
        "heartbeat interval must be > 0 and the window at least one interval");
  }
  if (options.max_receive_bytes < 1024) {
    return absl::InvalidArgumentError("max_receive_bytes must be at least 1024");
  }
  auto creds = MakeCredentials(options.tls);
  if (!creds.ok()) return creds.status();
  TokenFile tokens = options.tokens;
  if (!options.token_file.empty()) {
    auto loaded = LoadTokenFile(options.token_file);
    if (!loaded.ok()) return loaded.status();
    tokens.node_by_token.insert(loaded->node_by_token.begin(), loaded->node_by_token.end());
    tokens.admin_tokens.insert(loaded->admin_tokens.begin(), loaded->admin_tokens.end());
  }

  const TokenReviewOptions& tr = options.token_review;
  if (tr.enabled) {
    if (options.token_reviewer == nullptr) {
      return absl::InvalidArgumentError(
          "token_review needs the Kubernetes API (TokenReview): run topogangd in cluster mode");
    }
    if (tr.audiences.empty() || tr.agent_usernames.empty()) {
      return absl::InvalidArgumentError(
          "token_review needs audiences and at least one agent service account");
    }
  }
  if (options.access_review.enabled) {
    if (!tr.enabled) {
      return absl::InvalidArgumentError(
          "access_review needs token_review: callers are identified by their token");
    }
    if (options.access_reviewer == nullptr) {
      return absl::InvalidArgumentError(
          "access_review needs the Kubernetes API (SubjectAccessReview): run topogangd in "
          "cluster mode");
    }
  }

  std::unique_ptr<GrpcServer> s(new GrpcServer());
  s->state_ = &state;
  AuthenticatorOptions ao_auth;
  ao_auth.tokens = std::move(tokens);
  ao_auth.allow_unauthenticated_agents = options.allow_unauthenticated_agents;
  ao_auth.allow_unauthenticated_admin = options.allow_unauthenticated_admin;
  if (tr.enabled) {
    ao_auth.token_reviewer = std::make_shared<CachingTokenReviewer>(
        options.token_reviewer, state.clock(),
        ReviewCacheOptions{tr.cache_ttl, tr.negative_cache_ttl});
    ao_auth.audiences = tr.audiences;
    ao_auth.agent_usernames = tr.agent_usernames;
    // A reconnect storm (12,500 agents after a daemon restart) queues one review per agent.
    s->workers_ = std::make_unique<ReviewWorkers>(tr.workers, 65536);
  }
  if (options.access_review.enabled) {
    ao_auth.access_reviewer = std::make_shared<CachingAccessReviewer>(
        options.access_reviewer, state.clock(),
        ReviewCacheOptions{options.access_review.cache_ttl,
                           options.access_review.negative_cache_ttl});
  }
  s->auth_ = std::make_unique<Authenticator>(std::move(ao_auth), s->workers_.get());
  s->monitor_ = std::make_unique<HeartbeatMonitor>(state, options.heartbeat_window);
  s->placement_ = std::make_unique<PlacementServiceImpl>(state, *s->auth_);
  AgentServiceOptions ao;
  if (options.datagram_port >= 0) {
    // Bound before the gRPC port, so that an explicit port is the same number for both (one
    // Service port, TCP and UDP); with port 0 the OS picks one and Register announces it.
    DatagramHeartbeatOptions dopt;
    dopt.host = HostOf(options.address);
    dopt.port = options.datagram_port > 0 ? options.datagram_port : PortOf(options.address);
    dopt.batch = options.datagram_batch;
    auto d = DatagramHeartbeats::Start(*s->monitor_, state.clock(), dopt);
    if (!d.ok()) return d.status();
    s->datagrams_ = *std::move(d);
    ao.datagrams = s->datagrams_.get();
  }
  ao.heartbeat_interval = options.heartbeat_interval;
  ao.fatal_xids = options.fatal_xids.empty() ? DefaultFatalXids() : options.fatal_xids;
  s->agent_ = std::make_unique<AgentServiceImpl>(state, *s->monitor_, *s->auth_, ao);

  grpc::ServerBuilder b;
  b.AddListeningPort(options.address, *creds, &s->port_);
  b.RegisterService(s->placement_.get());
  b.RegisterService(s->agent_.get());
  b.SetMaxReceiveMessageSize(options.max_receive_bytes);
  if (options.max_connection_idle > absl::ZeroDuration()) {
    b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                         static_cast<int>(absl::ToInt64Milliseconds(options.max_connection_idle)));
  }
  s->server_ = b.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("gRPC: cannot listen on ", options.address));
  }
  if (options.run_monitor_thread) {
    absl::Duration period = options.monitor_period;
    if (period <= absl::ZeroDuration()) {
      period = std::max(options.heartbeat_window / 10, absl::Milliseconds(100));
    }
    s->monitor_thread_ = std::thread([srv = s.get(), period] { srv->MonitorLoop(period); });
  }
  return s;
}

void GrpcServer::MonitorLoop(absl::Duration period) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    cv_.wait_for(lock, absl::ToChronoNanoseconds(period));
    if (stopped_) break;
    lock.unlock();
    monitor_->CheckNow();
    agent_->EndExpiredStreams(state_->clock().Now());
    lock.lock();
  }
}

void GrpcServer::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  cv_.notify_all();
  if (monitor_thread_.joinable()) monitor_thread_.join();
  placement_->Stop();
  if (datagrams_) datagrams_->Stop();
  // RPCs waiting for a TokenReview are answered UNAVAILABLE; later ones at once, the same way.
  if (workers_) workers_->Stop();
  // Give unary calls a moment, then cancel what is left (agent streams wait on reads forever).
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server_->Wait();
}

GrpcServer::~GrpcServer() { Shutdown(); }

}  // namespace topogang
