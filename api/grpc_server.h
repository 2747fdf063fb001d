// Starts topogangd's gRPC front end (PlacementService + AgentService + the heartbeat monitor)
// on the shared DaemonState. topogangd's main and the in-process tests both use this.
#pragma once

#include <grpcpp/server.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/agent_service.h"
#include "api/datagram_heartbeats.h"
#include "api/heartbeat_monitor.h"
#include "api/identity.h"
#include "api/placement_service.h"
#include "api/review_workers.h"
#include "api/reviewers.h"
#include "daemon/daemon_state.h"

namespace topogang {

struct GrpcTlsOptions {
  std::string cert_file;  // server certificate chain (PEM); empty = plaintext
  std::string key_file;   // its private key (PEM)
  // CA bundle (PEM) that client certificates must chain to; non-empty = mutual TLS.
  std::string client_ca_file;
  // With client_ca_file: refuse connections without a client certificate. false lets token-only
  // clients (the CLI) in while agents still present certificates.
  bool require_client_cert = true;
};

// Agents authenticated by their projected ServiceAccount token, checked with the API server's
// TokenReview (docs/security.md). Also how Drain callers are identified for access_review.
struct TokenReviewOptions {
  bool enabled = false;
  // spec.audiences: the audience of the agents' projected token (and of admin callers' tokens).
  std::vector<std::string> audiences = {"topogang"};
  // "system:serviceaccount:NS:NAME" of the agent DaemonSet; required when enabled.
  std::set<std::string> agent_usernames;
  absl::Duration cache_ttl = absl::Seconds(10);
  absl::Duration negative_cache_ttl = absl::Seconds(10);
  absl::Duration timeout = absl::Seconds(5);  // one TokenReview round trip (topogangd's main)
  int workers = 4;                            // threads that wait on TokenReviews
};

// Drain/Undrain allowed by the API server's SubjectAccessReview (RBAC) on verb drain/undrain of
// nodes.topogang.io; needs token_review for the caller's identity.
struct AccessReviewOptions {
  bool enabled = false;
  absl::Duration cache_ttl = absl::Seconds(10);
  absl::Duration negative_cache_ttl = absl::Seconds(10);
};

struct GrpcServerOptions {
  std::string address = "127.0.0.1:0";  // host:port; port 0 = chosen by the OS
  GrpcTlsOptions tls;
  std::string token_file;  // "TOKEN NODE" / "TOKEN @admin" lines (identity.h)
  TokenFile tokens;        // merged with token_file (for tests and embedding)
  // Accept agents that present neither a certificate nor a token. For plaintext demos and tests
  // only: any caller could then report for any node.
  bool allow_unauthenticated_agents = false;
  // Accept Drain/Undrain from anyone. Demos and tests only; without it and without an @admin
  // token or access_review, they are refused.
  bool allow_unauthenticated_admin = false;
  TokenReviewOptions token_review;
  AccessReviewOptions access_review;
  // What answers the reviews (the API server, wired by topogangd's main; a fake in tests); the
  // server caches their verdicts. Required when the matching option is enabled.
  std::shared_ptr<TokenReviewer> token_reviewer;
  std::shared_ptr<AccessReviewer> access_reviewer;
  absl::Duration heartbeat_interval = absl::Seconds(10);
  absl::Duration heartbeat_window = absl::Seconds(30);
  // Datagram heartbeats (api/datagram_heartbeats.h) for agents that ask: UDP on this port of the
  // gRPC address's host; 0 = the gRPC port itself (an OS-chosen one when that is 0); -1 = off
  // (agents then hold ReportHealth streams).
  int datagram_port = 0;
  absl::Duration datagram_batch = absl::Milliseconds(50);
  // Connections without a call for this long are closed (GOAWAY): an agent with datagram
  // heartbeats reconnects for its next event. 0 = never.
  absl::Duration max_connection_idle = absl::Minutes(5);
  // How often the monitor thread checks for silent agents; 0 = window / 10, at least 100 ms.
  // run_monitor_thread=false leaves it to the caller (tests call monitor().CheckNow()).
  absl::Duration monitor_period = absl::ZeroDuration();
  bool run_monitor_thread = true;
  int max_receive_bytes = 1 << 20;  // larger requests get RESOURCE_EXHAUSTED
  std::set<uint32_t> fatal_xids;    // empty = DefaultFatalXids()
};

class GrpcServer {
 public:
  ~GrpcServer();
  int port() const { return port_; }
  HeartbeatMonitor& monitor() { return *monitor_; }
  DatagramHeartbeats* datagrams() { return datagrams_.get(); }  // null when off
  AgentServiceImpl& agents() { return *agent_; }
  // Ends streams (WatchDecisions within ~100 ms, agent streams at once), stops the monitor,
  // answers RPCs still waiting for a TokenReview, and waits for handlers. Idempotent.
  void Shutdown();

 private:
  friend absl::StatusOr<std::unique_ptr<GrpcServer>> StartGrpcServer(DaemonState&,
                                                                     const GrpcServerOptions&);
  GrpcServer() = default;
  void MonitorLoop(absl::Duration period);

  int port_ = 0;
  DaemonState* state_ = nullptr;
  std::unique_ptr<ReviewWorkers> workers_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<HeartbeatMonitor> monitor_;
  std::unique_ptr<DatagramHeartbeats> datagrams_;  // before agent_, which points to it
  std::unique_ptr<PlacementServiceImpl> placement_;
  std::unique_ptr<AgentServiceImpl> agent_;
  std::unique_ptr<grpc::Server> server_;
  std::thread monitor_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

absl::StatusOr<std::unique_ptr<GrpcServer>> StartGrpcServer(DaemonState& state,
                                                            const GrpcServerOptions& options);

}  // namespace topogang
