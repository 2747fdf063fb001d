// Prometheus metrics for topogangd, served as text at GET /metrics by the extender's own HTTP
// server (no second listener: prometheus-cpp's civetweb Exposer is not used).
//
// Two kinds of numbers:
//  - counted as things happen: requests per verb and result with their latency (ExtenderRoutes),
//    and decision events by kind (a DaemonState event observer). The request path costs one
//    counter increment and one histogram observation, on pre-created series (no label lookups);
//  - read at scrape time: gangs and held binds (GangLedger::GetStats), GPUs and nodes by
//    state (one O(nodes) pass under the DaemonState lock), hot spares by state (idle, in use,
//    unhealthy; labelled with their tier only, never per node), leadership and sync flags. Nothing
//    on the hot path maintains them, so they cannot drift from the model.
//
// prometheus-cpp types stay out of this header (pointers to forward-declared classes), so the
// extender headers that include it do not pull in prometheus-cpp.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/string_view.h"

namespace prometheus {
template <typename T>
class Family;
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace topogang {

class DaemonState;
class GangLedger;

class DaemonMetrics {
 public:
  enum class Verb { kFilter, kPrioritize, kBind, kPreempt, kCount };
  // How a verb request was answered.
  enum class Result {
    kOk,          // answered normally (a filter that passes no node is still ok)
    kError,       // the answer carries an error (filter/bind Error field, prioritize/preempt 4xx)
    kBadRequest,  // the body did not parse
    kTooLarge,    // the body was over the size limit
    kStandby,     // this replica is not the leader
    kStopping,    // the daemon is shutting down
    kInternal,    // an exception escaped the verb (a bug)
    kCount
  };
  static const char* VerbName(Verb v);
  static const char* ResultName(Result r);

  // `state` (GPU and node gauges, decision-event counter) may be null: those metrics are then
  // left out. It must outlive this object, which registers an event observer on it and removes
  // it when destroyed.
  explicit DaemonMetrics(DaemonState* state);
  ~DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // Hot path: lock-free counter add and one histogram observation.
  void ObserveRequest(Verb verb, Result result, double seconds);
  // Counted without a latency (the transport rejects the body before any verb runs).
  void CountRequest(Verb verb, Result result);
  // One decision event (DaemonState::Publish); `kind` as published, e.g. "bind-failed".
  void CountEvent(absl::string_view kind);

  // Adds the gang gauges, read from `service` at scrape time. Separate from the constructor so
  // this object can be built first and outlive the service: a bind reply failed by the
  // service's destructor still counts into this object.
  void AttachLedger(const GangLedger* ledger);

  void SetLeader(bool leader) { leader_ = leader; }
  void SetReady(bool ready) { ready_ = ready; }
  void SetModelSynced(bool synced) { synced_ = synced; }
  // Adds topogang_agent_streams, read from `source` at scrape time (gRPC agent service).
  void SetAgentStreamsSource(std::function<double()> source);

  // The Prometheus text exposition format (version 0.0.4) of every metric, as of now.
  std::string Render();

  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  void UpdateScrapeGauges();

  DaemonState* state_;
  std::shared_ptr<prometheus::Registry> registry_;
  // [verb][result] and [verb]: created up front so the request path never looks labels up.
  std::array<std::array<prometheus::Counter*, static_cast<size_t>(Result::kCount)>,
             static_cast<size_t>(Verb::kCount)>
      requests_{};
  std::array<prometheus::Histogram*, static_cast<size_t>(Verb::kCount)> durations_{};

  std::mutex events_mu_;  // event kinds are created on first sight (a small, fixed set)
  std::map<std::string, prometheus::Counter*, std::less<>> events_;
  prometheus::Family<prometheus::Counter>* events_family_ = nullptr;

  prometheus::Gauge* gangs_reserved_ = nullptr;
  prometheus::Gauge* gangs_running_ = nullptr;
  prometheus::Gauge* held_binds_ = nullptr;
  prometheus::Gauge* gangs_degraded_ = nullptr;
  prometheus::Gauge* large_overload_ = nullptr;  // only with the queue's overload backlog set
  // topogang_queue_gangs / topogang_queue_longest_wait_seconds {size="large"|"small"}
  std::array<prometheus::Gauge*, 2> queued_{}, longest_wait_{};
  prometheus::Gauge* gpus_free_ = nullptr;
  prometheus::Gauge* gpus_allocated_ = nullptr;
  prometheus::Gauge* gpus_unhealthy_ = nullptr;
  prometheus::Gauge* nodes_healthy_ = nullptr;
  prometheus::Gauge* nodes_unhealthy_ = nullptr;
  prometheus::Gauge* nodes_cordoned_ = nullptr;
  // topogang_spare_nodes{tier,state}: the series of the pool's current tier (the tier may only
  // be known once nodes are listed, and changes with the detected topology).
  void UpdateSpareGauges();
  prometheus::Family<prometheus::Gauge>* spares_family_ = nullptr;
  std::string spare_tier_;
  std::array<prometheus::Gauge*, 3> spare_gauges_{};  // idle, in_use, unhealthy
  prometheus::Gauge* leader_gauge_ = nullptr;
  prometheus::Gauge* ready_gauge_ = nullptr;
  prometheus::Gauge* synced_gauge_ = nullptr;
  std::atomic<bool> leader_{false}, ready_{false}, synced_{false};

  std::mutex scrape_mu_;  // one scrape at a time: gauges set, then collected, as one step
  const GangLedger* ledger_ = nullptr;
  prometheus::Gauge* agent_streams_ = nullptr;
  std::function<double()> agent_streams_source_;
};

}  // namespace topogang
