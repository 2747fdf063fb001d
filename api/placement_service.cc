#include "api/placement_service.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "api/convert.h"
#include "api/explain.h"
#include "scheduler/planner.h"

namespace topogang {

namespace {

constexpr int kMaxDryRunGangs = 1000;
constexpr int kMaxDrainedNodes = 100000;
constexpr absl::Duration kWatchPoll = absl::Milliseconds(100);

grpc::Status Invalid(absl::string_view msg) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(msg));
}

// Members of `r` on a hot spare (replacements), for `topogang gangs`.
void MarkSpareMembers(const SparePool& pool, const GangRecord& r, v1::Gang* g) {
  for (size_t m = 0; m < r.placement.members.size(); ++m) {
    const int n = r.placement.members[m].node;
    if (n >= 0 && pool.IsSpare(n)) g->add_spare_members(static_cast<int>(m));
  }
}

// A copy of the live model with the hot spares cordoned, as the daemon plans ordinary work on it
// (`keep`: nodes left visible, the explained gang's own).
Cluster PlanningCopy(DaemonState& state, const std::vector<int>& keep = {}) {
  return state.WithSpares([&](GangScheduler& s, const SparePool& pool) {
    Cluster c = s.cluster();
    for (int n : pool.nodes()) {
      if (!c.NodeCordoned(n) && std::find(keep.begin(), keep.end(), n) == keep.end()) {
        c.SetNodeCordoned(n, true);
      }
    }
    return c;
  });
}

}  // namespace

grpc::Status PlacementServiceImpl::DryRun(grpc::ServerContext*, const v1::DryRunRequest* req,
                                          v1::DryRunResponse* resp) {
  if (req->gangs_size() == 0) return Invalid("dry run needs at least one gang");
  if (req->gangs_size() > kMaxDryRunGangs) {
    return Invalid(
        absl::StrCat("dry run takes at most ", kMaxDryRunGangs, " gangs, got ", req->gangs_size()));
  }
  if (req->drained_nodes_size() > kMaxDrainedNodes) return Invalid("too many drained_nodes");
  std::vector<GangSpec> gangs;
  for (int i = 0; i < req->gangs_size(); ++i) {
    auto g = GangFromProto(req->gangs(i));
    if (!g.ok()) return Invalid(absl::StrCat("gangs[", i, "]: ", g.status().message()));
    gangs.push_back(*std::move(g));
  }
  // Plan on a private copy: the live state is never touched, and the lock is held only for
  // the copy. Hot spares are not ordinary capacity: hidden, as the daemon hides them.
  Cluster c = PlanningCopy(state_);
  for (const std::string& name : req->drained_nodes()) {
    int n = c.FindNode(name);
    if (n < 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("drained_nodes: unknown node '", name.substr(0, 253), "'"));
    }
    c.SetNodeCordoned(n, true);
  }
  resp->set_free_healthy_gpus(c.FreeHealthy(0));
  resp->set_total_gpus(c.num_gpus());
  for (const GangSpec& g : gangs) {
    v1::DryRunResult* r = resp->add_results();
    r->set_gang(g.name);
    absl::StatusOr<Placement> p = Planner(c).Plan(g);
    if (!p.ok()) {
      if (p.status().code() != absl::StatusCode::kResourceExhausted) {
        return Invalid(absl::StrCat("gang '", g.name, "': ", p.status().message()));
      }
      r->set_fits(false);
      r->set_no_fit_reason(std::string(p.status().message()));
      continue;
    }
    r->set_fits(true);
    PlacementToProto(c, *p, r->mutable_placement());
    std::vector<int> gpus = p->Gpus();
    if (absl::Status s = c.Allocate(gpus); !s.ok()) {
      return grpc::Status(grpc::StatusCode::INTERNAL, std::string(s.message()));
    }
  }
  return grpc::Status::OK;
}

grpc::Status PlacementServiceImpl::Explain(grpc::ServerContext*, const v1::ExplainRequest* req,
                                           v1::ExplainResponse* resp) {
  if (req->gang().empty() && req->spec().name().empty()) {
    return Invalid("explain needs a gang name or a spec");
  }
  if (req->gang().size() > 253) return Invalid("gang name longer than 253 bytes");
  if (req->max_domains_per_tier() < 0 || req->max_domains_per_tier() > 100) {
    return Invalid("max_domains_per_tier must be 0..100");
  }
  const int max_rejected = req->max_domains_per_tier() ? req->max_domains_per_tier() : 5;
  const std::string name = req->gang().empty() ? req->spec().name() : req->gang();
  // Copy what we need under the lock, explain outside it.
  std::optional<GangRecord> held;
  state_.With([&](GangScheduler& s) {
    if (const GangRecord* r = s.Find(name)) held = *r;
    return 0;
  });
  std::vector<int> own;  // a replacement on a spare stays visible to its own gang
  if (held) {
    for (const MemberPlacement& m : held->placement.members) own.push_back(m.node);
  }
  Cluster c = PlanningCopy(state_, own);
  resp->set_gang(name);
  GangSpec spec;
  if (held) {
    resp->set_held(true);
    spec = held->spec;
    resp->set_state(GangStateToProto(held->state));
    PlacementToProto(c, held->placement, resp->mutable_placement());
    // Explain as if its GPUs were free again, so the tiers show where it could be now.
    (void)c.Release(held->placement.Gpus());
  } else {
    if (!req->has_spec() || req->spec().name().empty()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("the daemon holds no gang '", name,
                                       "'; pass its spec to explain where it could go"));
    }
    auto g = GangFromProto(req->spec());
    if (!g.ok()) return Invalid(g.status().message());
    spec = *std::move(g);
  }
  // Per-job exclusion: what this gang avoids (as the ledger last planned it, plus the nodes slow
  // now when it is large enough to care); the tiers are explained without those nodes.
  const absl::Time now = state_.clock().Now();
  std::vector<AvoidanceBook::Node> avoided = state_.avoidance().For(name);
  const long slow_gpus = state_.avoidance().slow_gang_gpus();
  resp->set_slow_node_gang_gpus(slow_gpus);
  for (const std::string& n : state_.slow_nodes().Slow(now)) {
    const std::string score = state_.slow_nodes().Describe(n, now);
    v1::AvoidedNode* slow = resp->add_slow_nodes();
    slow->set_node(n);
    slow->set_reason(score);
    const bool listed = std::any_of(avoided.begin(), avoided.end(),
                                    [&](const AvoidanceBook::Node& a) { return a.name == n; });
    if (slow_gpus > 0 && spec.total_gpus() >= slow_gpus && !listed) {
      avoided.push_back({n, SlowNodeReason(score, slow_gpus)});
    }
  }
  for (const AvoidanceBook::Node& a : avoided) {
    v1::AvoidedNode* out = resp->add_avoided_nodes();
    out->set_node(a.name);
    out->set_reason(a.reason);
    if (int i = c.FindNode(a.name); i >= 0) c.SetNodeCordoned(i, true);
  }
  ExplainGang(c, spec, max_rejected, resp);
  const v1::Placement& pl = resp->placement();
  std::string summary;
  if (held) {
    summary = absl::StrCat("gang ", name, " is ", GangStateName(held->state), " on ",
                           pl.nodes_size(), " nodes within ", pl.tier(), " ", pl.domain(), " (",
                           static_cast<int>(pl.bandwidth_gbps()), " Gb/s per GPU, ",
                           pl.leftover_gpus(), " GPUs left in that domain). ");
  }
  const char* as_if = held ? "With its own GPUs freed, a fresh plan" : "A plan now";
  if (resp->would_fit_now()) {
    const v1::TierExplanation* narrowest = nullptr;
    for (const auto& t : resp->tiers()) {
      if (t.allowed() && t.domains_that_fit() > 0) {
        narrowest = &t;
        break;
      }
    }
    absl::StrAppend(&summary, as_if, " fits",
                    narrowest ? absl::StrCat("; the narrowest tier with room is ",
                                             narrowest->tier(), " (", narrowest->best_domain(), ")")
                              : "",
                    ".");
  } else {
    absl::StrAppend(&summary, as_if, " does not fit: ", resp->no_fit_reason());
  }
  if (!avoided.empty()) {
    absl::StrAppend(&summary, " It avoids ", avoided.size(), " node(s): ");
    for (size_t i = 0; i < avoided.size() && i < 3; ++i) {
      absl::StrAppend(&summary, i ? "; " : "", avoided[i].name, " (", avoided[i].reason, ")");
    }
    if (avoided.size() > 3) absl::StrAppend(&summary, "; and ", avoided.size() - 3, " more");
    absl::StrAppend(&summary, ".");
  }
  resp->set_summary(summary);
  return grpc::Status::OK;
}

grpc::Status PlacementServiceImpl::GetGang(grpc::ServerContext*, const v1::GetGangRequest* req,
                                           v1::Gang* resp) {
  if (req->gang().empty() || req->gang().size() > 253)
    return Invalid("gang name must be 1..253 bytes");
  bool found = state_.WithSpares([&](GangScheduler& s, const SparePool& pool) {
    const GangRecord* r = s.Find(req->gang());
    if (r) {
      GangRecordToProto(s.cluster(), *r, resp);
      MarkSpareMembers(pool, *r, resp);
    }
    return r != nullptr;
  });
  if (!found) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("the daemon holds no gang '", req->gang(), "'"));
  }
  return grpc::Status::OK;
}

grpc::Status PlacementServiceImpl::ListGangs(grpc::ServerContext*, const v1::ListGangsRequest* req,
                                             v1::ListGangsResponse* resp) {
  if (!v1::GangState_IsValid(req->state())) return Invalid("unknown gang state");
  state_.WithSpares([&](GangScheduler& s, const SparePool& pool) {
    for (const auto& [name, r] : s.gangs()) {
      const v1::GangState st = GangStateToProto(r.state);
      if (req->state() != v1::GANG_STATE_UNSPECIFIED && req->state() != st) continue;
      v1::Gang* g = resp->add_gangs();
      GangRecordToProto(s.cluster(), r, g);
      MarkSpareMembers(pool, r, g);
    }
  });
  return grpc::Status::OK;
}

grpc::Status PlacementServiceImpl::ListReservations(grpc::ServerContext*,
                                                    const v1::ListReservationsRequest*,
                                                    v1::ListReservationsResponse* resp) {
  state_.With([&](GangScheduler& s) {
    for (const auto& [name, r] : s.gangs()) {
      if (r.state == GangState::kReserved)
        GangRecordToProto(s.cluster(), r, resp->add_reservations());
    }
  });
  std::stable_sort(resp->mutable_reservations()->begin(), resp->mutable_reservations()->end(),
                   [](const v1::Gang& a, const v1::Gang& b) {
                     return a.expires_at_unix_ms() < b.expires_at_unix_ms();
                   });
  return grpc::Status::OK;
}

grpc::Status PlacementServiceImpl::ListSpares(grpc::ServerContext*, const v1::ListSparesRequest*,
                                              v1::ListSparesResponse* resp) {
  const DaemonState::SpareReport r = state_.ListSpares();
  resp->set_tier(r.tier);
  resp->set_per_domain(r.per_domain);
  resp->set_error(r.error);
  for (const DaemonState::SpareNode& n : r.nodes) {
    v1::SpareNode* p = resp->add_spares();
    p->set_node(n.node);
    p->set_domain(n.domain);
    p->set_gpus(n.gpus);
    p->set_free_gpus(n.free_gpus);
    p->set_used_gpus(n.used_gpus);
    p->set_marked(n.marked);
    p->set_healthy(n.healthy);
    for (const std::string& g : n.gangs) p->add_gangs(g);
  }
  return grpc::Status::OK;
}

grpc::Status PlacementServiceImpl::WatchDecisions(grpc::ServerContext* ctx,
                                                  const v1::WatchDecisionsRequest* req,
                                                  grpc::ServerWriter<v1::DecisionEvent>* writer) {
  if (req->after_seq() < 0) return Invalid("after_seq must be >= 0");
  int64_t after = req->from_now() ? state_.LastSeq() : req->after_seq();
  // Tell the client the watch is live (and from which point) before the first event.
  writer->SendInitialMetadata();
  // Poll in short slices so a client cancel or a server stop ends the stream promptly.
  while (!stopping_ && !ctx->IsCancelled()) {
    const absl::Time deadline = absl::Now() + kWatchPoll;
    std::vector<DecisionEvent> events = state_.WaitEvents(after, deadline);
    if (events.empty() && absl::Now() < deadline - absl::Milliseconds(5)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "daemon is shutting down");
    }
    for (const DecisionEvent& e : events) {
      v1::DecisionEvent pe;
      EventToProto(e, &pe);
      if (!writer->Write(pe)) return grpc::Status::CANCELLED;
      after = e.seq;
    }
  }
  if (stopping_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "daemon is shutting down");
  return grpc::Status::CANCELLED;
}

grpc::Status PlacementServiceImpl::SetDrain(grpc::ServerContext* ctx, const v1::DrainRequest* req,
                                            bool drain, v1::NodeHealth* resp) {
  if (req->node().empty() || req->node().size() > 253)
    return Invalid("node name must be 1..253 bytes");
  if (grpc::Status s = auth_.AuthorizeAdmin(*ctx, drain ? kDrainVerb : kUndrainVerb, req->node());
      !s.ok()) {
    return s;
  }
  if (drain && req->reason().empty()) return Invalid("drain needs a reason");
  if (req->reason().size() > 256) return Invalid("reason longer than 256 bytes");
  absl::Status s = state_.SetAdminDrain(req->node(), drain, drain ? req->reason() : "");
  if (!s.ok()) return ToGrpcStatus(s);
  const uint8_t mask = state_.NodeHealthSources(req->node());
  resp->set_node(req->node());
  resp->set_healthy(mask == 0);
  for (HealthSource src :
       {HealthSource::kKubeCordon, HealthSource::kKubeTaint, HealthSource::kKubeNotReady,
        HealthSource::kAdminDrain, HealthSource::kAgentLost}) {
    if (mask & static_cast<uint8_t>(src)) resp->add_sources(HealthSourceName(src));
  }
  if (mask) resp->set_reason(state_.NodeHealthReason(req->node()));
  resp->set_free_healthy_gpus(state_.With([&](GangScheduler& sc) {
    int n = sc.cluster().FindNode(req->node());
    return n < 0 ? 0 : sc.cluster().NodeFreeHealthy(n);
  }));
  return grpc::Status::OK;
}

grpc::Status PlacementServiceImpl::Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req,
                                         v1::NodeHealth* resp) {
  return SetDrain(ctx, req, true, resp);
}

grpc::Status PlacementServiceImpl::Undrain(grpc::ServerContext* ctx, const v1::DrainRequest* req,
                                           v1::NodeHealth* resp) {
  return SetDrain(ctx, req, false, resp);
}

}  // namespace topogang
