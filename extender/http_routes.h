// What each HTTP path means, apart from how bytes move: POST <prefix>/<verb> for filter,
// prioritize, bind and preempt, GET /healthz, /readyz, /stats and /metrics (Prometheus). The
// transport (http_server.cc) hands over a complete request and gets exactly one reply back, later
// for held binds.
//
// Only HTTP 200 is accepted by kube-scheduler, so verb-level problems (bad JSON, absurd input,
// a standby replica) go back as 200 with the result's Error field where the type has one (filter,
// bind); prioritize and preempt, which have none, answer 4xx/503 with the message.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>

#include "absl/strings/string_view.h"
#include "daemon/metrics.h"
#include "extender/extender_service.h"

namespace topogang {

struct HttpServerOptions {
  std::string bind_address = "127.0.0.1";
  int port = 8888;
  std::string prefix = "";  // e.g. "/scheduler"; requests go to prefix + "/" + verb
  std::string filter_verb = "filter";
  std::string prioritize_verb = "prioritize";
  std::string bind_verb = "bind";
  std::string preempt_verb = "preempt";
  size_t max_body_bytes = 64u << 20;
  // Server threads. Verbs run on them (a filter is CPU work, ~0.5 ms for 12,500 names), so more
  // than the cores the daemon gets only adds contention. 0 = min(4, max(2, hardware threads)).
  int threads = 0;
  // Open connections beyond this are closed at once. kube-scheduler opens one per pod in its
  // binding cycle, and every member of a gang waits at the barrier on its own connection: this
  // must exceed the largest gang's member count (the daemon raises its open-files limit to fit).
  int max_connections = 16384;
};

struct HttpReply {
  int status = 200;
  std::string body;
  const char* content_type = "application/json";
};
using ReplyFn = std::function<void(HttpReply)>;

class ExtenderRoutes {
 public:
  // `metrics` (optional) counts every verb request and serves GET /metrics; it must outlive the
  // service (a held bind's reply, failed by the service's destructor, still counts into it).
  ExtenderRoutes(ExtenderService& service, const HttpServerOptions& options,
                 DaemonMetrics* metrics = nullptr);

  // Calls `reply` exactly once: before returning, or later from the service's worker (a bind
  // waiting at its gang's barrier).
  void Handle(absl::string_view method, absl::string_view target, std::string body, ReplyFn reply);
  // The answer to a request whose body is over max_body_bytes (its body is never read); counted
  // as a too_large request of its verb.
  HttpReply TooLarge(absl::string_view target, uint64_t declared) const;

  // /readyz answers 200 only once the model is in sync (kube mode: after the first list) and
  // this replica leads.
  void SetReady(bool ready) {
    ready_ = ready;
    if (metrics_) metrics_->SetReady(ready);
  }
  // A standby replica answers every verb with an error: its ledger is empty, and two replicas
  // reserving from two ledgers would double-book GPUs.
  void SetLeader(bool leader) {
    leader_ = leader;
    if (metrics_) metrics_->SetLeader(leader);
  }
  // After this, verbs answer 503 without touching the service; waits for handlers in progress.
  void Shutdown();

 private:
  enum class Verb { kNone, kFilter, kPrioritize, kBind, kPreempt };
  using Start = std::chrono::steady_clock::time_point;
  Verb VerbOf(absl::string_view path) const;
  HttpReply TooLargeReply(Verb verb, uint64_t declared) const;
  void HandleVerb(Verb verb, const std::string& body, ReplyFn& reply, Start start);
  static DaemonMetrics::Verb MetricsVerb(Verb verb);  // verb must not be kNone
  // Counts one answered verb request and its latency since `start` (no-op without metrics).
  static void Record(DaemonMetrics* metrics, Verb verb, DaemonMetrics::Result result, Start start);

  ExtenderService& service_;
  DaemonMetrics* const metrics_;
  const size_t max_body_bytes_;
  const std::string filter_, prioritize_, bind_, preempt_;
  std::atomic<bool> ready_{true};
  std::atomic<bool> leader_{true};
  std::shared_mutex alive_mu_;  // shared while a handler touches the service
  bool alive_ = true;
};

}  // namespace topogang
