#include "daemon/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "absl/strings/str_cat.h"
#include "daemon/daemon_state.h"
#include "daemon/gang_ledger.h"
#include "daemon/version.h"

namespace topogang {
namespace {

// 100 us to 5 s: a small filter answers in ~100 us, a 12,500-node one in ~1-2 ms, and a held bind
// waits up to the barrier window (4 s by default, below kube-scheduler's 5 s httpTimeout).
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  return kBuckets;
}

// Event kinds are published with dashes ("bind-failed"); label values read better with
// underscores, like the rest of the exposition.
std::string EventLabel(absl::string_view kind) {
  std::string s(kind);
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

}  // namespace

const char* DaemonMetrics::VerbName(Verb v) {
  switch (v) {
    case Verb::kFilter:
      return "filter";
    case Verb::kPrioritize:
      return "prioritize";
    case Verb::kBind:
      return "bind";
    case Verb::kPreempt:
      return "preempt";
    case Verb::kCount:
      break;
  }
  return "?";
}

const char* DaemonMetrics::ResultName(Result r) {
  switch (r) {
    case Result::kOk:
      return "ok";
    case Result::kError:
      return "error";
    case Result::kBadRequest:
      return "bad_request";
    case Result::kTooLarge:
      return "too_large";
    case Result::kStandby:
      return "standby";
    case Result::kStopping:
      return "stopping";
    case Result::kInternal:
      return "internal";
    case Result::kCount:
      break;
  }
  return "?";
}

DaemonMetrics::DaemonMetrics(DaemonState* state)
    : state_(state), registry_(std::make_shared<prometheus::Registry>()) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  prometheus::Registry& r = *registry_;

  auto& requests = BuildCounter()
                       .Name("topogang_extender_requests_total")
                       .Help("Extender verb requests from kube-scheduler, by verb and result.")
                       .Register(r);
  auto& durations = BuildHistogram()
                        .Name("topogang_extender_request_duration_seconds")
                        .Help(
                            "Time from a verb request read to its reply produced (a bind "
                            "includes its wait at the gang barrier).")
                        .Register(r);
  for (int v = 0; v < static_cast<int>(Verb::kCount); ++v) {
    const char* verb = VerbName(static_cast<Verb>(v));
    for (int res = 0; res < static_cast<int>(Result::kCount); ++res) {
      requests_[v][res] =
          &requests.Add({{"verb", verb}, {"result", ResultName(static_cast<Result>(res))}});
    }
    durations_[v] = &durations.Add({{"verb", verb}}, DurationBuckets());
  }

  BuildGauge()
      .Name("topogang_build_info")
      .Help("Always 1; the version label says which topogangd this is.")
      .Register(r)
      .Add({{"version", TopogangVersion()}})
      .Set(1);
  auto flag = [&](const char* name, const char* help) -> prometheus::Gauge& {
    return BuildGauge().Name(name).Help(help).Register(r).Add({});
  };
  leader_gauge_ = &flag("topogang_leader",
                        "1 when this replica leads (or runs without leader election) and serves "
                        "verbs; 0 on a standby.");
  ready_gauge_ = &flag("topogang_ready", "1 when /readyz answers 200 (model synced and leading).");
  synced_gauge_ = &flag("topogang_model_synced",
                        "1 once the model reflects the cluster (cluster mode: after the first "
                        "node and pod list); always 1 standalone.");

  if (state_ != nullptr) {
    auto& gpus = BuildGauge()
                     .Name("topogang_gpus")
                     .Help(
                         "GPUs in the model: free (usable), allocated (reserved or running), "
                         "unhealthy (free but faulty or on an unusable node).")
                     .Register(r);
    gpus_free_ = &gpus.Add({{"state", "free"}});
    gpus_allocated_ = &gpus.Add({{"state", "allocated"}});
    gpus_unhealthy_ = &gpus.Add({{"state", "unhealthy"}});
    auto& nodes = BuildGauge()
                      .Name("topogang_nodes")
                      .Help(
                          "GPU nodes in the model: healthy, unhealthy (NotReady or agent "
                          "lost), cordoned (cordon, NoSchedule taint or admin drain).")
                      .Register(r);
    nodes_healthy_ = &nodes.Add({{"state", "healthy"}});
    nodes_unhealthy_ = &nodes.Add({{"state", "unhealthy"}});
    nodes_cordoned_ = &nodes.Add({{"state", "cordoned"}});
    auto& events = BuildCounter()
                       .Name("topogang_gang_events_total")
                       .Help(
                           "Scheduling decisions by kind: reserve, bind, bind_failed, expire "
                           "(barrier window or reservation TTL), unschedulable, release, "
                           "replan, node_unhealthy, ...")
                       .Register(r);
    // The kinds an operator alerts on exist from the start (at 0), so rate() works at once.
    for (const char* kind : {"reserve", "bind", "bind-failed", "expire", "unschedulable"}) {
      events_.emplace(kind, &events.Add({{"event", EventLabel(kind)}}));
    }
    events_family_ = &events;
    spares_family_ = &BuildGauge()
                          .Name("topogang_spare_nodes")
                          .Help(
                              "Hot spare nodes (daemon.spares, topogang.io/spare=true) of the "
                              "tier they are kept per domain of: idle (every GPU free), in_use "
                              "(a replacement or another pod holds GPUs), unhealthy (neither: "
                              "faulty GPUs or an unusable node). The states sum to the pool.")
                          .Register(r);
    state_->SetEventObserver([this](const DecisionEvent& e) { CountEvent(e.kind); });
  }
}

DaemonMetrics::~DaemonMetrics() {
  if (state_ != nullptr) state_->SetEventObserver(nullptr);
}

void DaemonMetrics::ObserveRequest(Verb verb, Result result, double seconds) {
  requests_[static_cast<size_t>(verb)][static_cast<size_t>(result)]->Increment();
  durations_[static_cast<size_t>(verb)]->Observe(seconds);
}

void DaemonMetrics::CountRequest(Verb verb, Result result) {
  requests_[static_cast<size_t>(verb)][static_cast<size_t>(result)]->Increment();
}

void DaemonMetrics::CountEvent(absl::string_view kind) {
  if (events_family_ == nullptr) return;
  std::lock_guard<std::mutex> lock(events_mu_);
  auto it = events_.find(kind);
  if (it == events_.end()) {
    it = events_.emplace(std::string(kind), &events_family_->Add({{"event", EventLabel(kind)}}))
             .first;
  }
  it->second->Increment();
}

void DaemonMetrics::AttachLedger(const GangLedger* ledger) {
  std::lock_guard<std::mutex> lock(scrape_mu_);
  if (gangs_reserved_ == nullptr && ledger != nullptr) {
    auto& gangs = prometheus::BuildGauge()
                      .Name("topogang_gangs")
                      .Help(
                          "Gangs in the ledger: reserved (waiting for members to filter and "
                          "bind) or running (bound).")
                      .Register(*registry_);
    gangs_reserved_ = &gangs.Add({{"state", "reserved"}});
    gangs_running_ = &gangs.Add({{"state", "running"}});
    held_binds_ = &prometheus::BuildGauge()
                       .Name("topogang_held_binds")
                       .Help(
                           "Bind requests held at their gang's barrier, waiting for the rest "
                           "of the gang.")
                       .Register(*registry_)
                       .Add({});
    gangs_degraded_ = &prometheus::BuildGauge()
                           .Name("topogang_gangs_degraded")
                           .Help(
                               "Gangs that a repair left slower than they ran (a replacement "
                               "alone in an NVLink domain, a thin side, a wider span); each has "
                               "a RepairDegraded event, until it ends or a later repair puts it "
                               "back (RepairRestored). Restarting one re-plans it whole.")
                           .Register(*registry_)
                           .Add({});
    const std::string large =
        absl::StrCat("large: gangs of queue.hold_min_gpus (", ledger->options().queue.hold_min_gpus,
                     ") GPUs or more, those it holds for");
    auto& queued =
        prometheus::BuildGauge()
            .Name("topogang_queue_gangs")
            .Help(absl::StrCat("Gangs waiting in the admission queue for room, by size (", large,
                               "; small: the rest)."))
            .Register(*registry_);
    auto& longest =
        prometheus::BuildGauge()
            .Name("topogang_queue_longest_wait_seconds")
            .Help(absl::StrCat("How long the longest-waiting gang of each size in the admission "
                               "queue has waited since it first asked (",
                               large,
                               "); 0 when none waits. Alert on size=\"large\": a starving "
                               "large gang."))
            .Register(*registry_);
    for (size_t i = 0; i < 2; ++i) {
      const std::string size = i == 0 ? "large" : "small";
      queued_[i] = &queued.Add({{"size", size}});
      longest_wait_[i] = &longest.Add({{"size", size}});
    }
    if (ledger->options().queue.LargeOverloadSwitch()) {
      large_overload_ = &prometheus::BuildGauge()
                             .Name("topogang_queue_large_overload")
                             .Help(
                                 "1 while the large gangs overload the cluster (their waiting "
                                 "GPUs passed large_in_order_overload_backlog of it within its "
                                 "memory): a starved gang stops only the share rule's gangs; 0: "
                                 "it stops every younger large gang, and smaller ones down to "
                                 "the share.")
                             .Register(*registry_)
                             .Add({});
    }
  }
  ledger_ = ledger;
}

void DaemonMetrics::SetAgentStreamsSource(std::function<double()> source) {
  std::lock_guard<std::mutex> lock(scrape_mu_);
  if (agent_streams_ == nullptr) {
    agent_streams_ = &prometheus::BuildGauge()
                          .Name("topogang_agent_streams")
                          .Help("Node agents with an open health stream (gRPC ReportHealth).")
                          .Register(*registry_)
                          .Add({});
  }
  agent_streams_source_ = std::move(source);
}

void DaemonMetrics::UpdateScrapeGauges() {
  leader_gauge_->Set(leader_ ? 1 : 0);
  ready_gauge_->Set(ready_ ? 1 : 0);
  synced_gauge_->Set(synced_ ? 1 : 0);
  if (ledger_ != nullptr) {
    const GangLedger::Stats st = ledger_->GetStats();
    gangs_reserved_->Set(st.reserved_gangs);
    gangs_running_->Set(st.running_gangs);
    held_binds_->Set(st.held_binds);
    gangs_degraded_->Set(st.degraded_gangs);
    if (large_overload_ != nullptr) large_overload_->Set(st.large_overload);
    queued_[0]->Set(st.queued.large);
    queued_[1]->Set(st.queued.small);
    longest_wait_[0]->Set(absl::ToDoubleSeconds(st.queued.longest_large));
    longest_wait_[1]->Set(absl::ToDoubleSeconds(st.queued.longest_small));
  }
  if (state_ != nullptr) {
    const DaemonState::HealthCounts h = state_->CountHealth();
    gpus_free_->Set(h.gpus_free);
    gpus_allocated_->Set(h.gpus_allocated);
    gpus_unhealthy_->Set(h.gpus_unhealthy);
    nodes_healthy_->Set(h.nodes_healthy);
    nodes_unhealthy_->Set(h.nodes_unhealthy);
    nodes_cordoned_->Set(h.nodes_cordoned);
    UpdateSpareGauges();
  }
  if (agent_streams_source_) agent_streams_->Set(agent_streams_source_());
}

void DaemonMetrics::UpdateSpareGauges() {
  const DaemonState::SpareReport r = state_->ListSpares();
  if (r.tier != spare_tier_) {
    for (prometheus::Gauge*& g : spare_gauges_) {
      if (g != nullptr) spares_family_->Remove(g);
      g = nullptr;
    }
    spare_tier_ = r.tier;
    if (!r.tier.empty()) {
      int i = 0;
      for (const char* st : {"idle", "in_use", "unhealthy"}) {
        spare_gauges_[i++] = &spares_family_->Add({{"tier", r.tier}, {"state", st}});
      }
    }
  }
  if (spare_tier_.empty()) return;  // spares off: no series at all
  std::array<int, 3> count{};
  for (const DaemonState::SpareNode& n : r.nodes) {
    ++count[n.used_gpus > 0 ? 1 : (n.healthy && n.free_gpus == n.gpus ? 0 : 2)];
  }
  for (size_t i = 0; i < count.size(); ++i) spare_gauges_[i]->Set(count[i]);
}

std::string DaemonMetrics::Render() {
  std::lock_guard<std::mutex> lock(scrape_mu_);
  UpdateScrapeGauges();
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace topogang
