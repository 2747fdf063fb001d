#include "api/agent_service.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/convert.h"
#include "scheduler/gpu_health_policy.h"
#include "scheduler/node_slowness.h"

namespace topogang {

namespace {

constexpr int kMaxGpusPerAgent = 1024;

grpc::Status Status(grpc::StatusCode code, absl::string_view msg) {
  return grpc::Status(code, std::string(msg));
}

grpc::Status CheckNodeName(const std::string& node) {
  if (node.empty() || node.size() > 253) {
    return Status(grpc::StatusCode::INVALID_ARGUMENT, "node name must be 1..253 bytes");
  }
  return grpc::Status::OK;
}

}  // namespace

// One ReportHealth stream: read a report, handle it, write the ack, read the next. Exactly one
// operation (or the first report's authentication) is pending at any time, so every path ends in
// exactly one Finish. The first report names the node; the caller's identity is checked against
// it (possibly a TokenReview on a review worker) before anything else happens.
class AgentServiceImpl::HealthStream
    : public grpc::ServerBidiReactor<v1::HealthReport, v1::HealthAck> {
 public:
  HealthStream(AgentServiceImpl* svc, grpc::CallbackServerContext* ctx) : svc_(svc), ctx_(ctx) {
    ++svc_->active_streams_;
    StartRead(&report_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);  // client closed or call cancelled
      return;
    }
    if (node_.empty()) {
      Authenticate();
    } else {
      Handle();
    }
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(grpc::StatusCode::CANCELLED, "stream broken"));
      return;
    }
    StartRead(&report_);
  }
  void OnDone() override {
    if (tracked_) svc_->Untrack(this, expires_);
    --svc_->active_streams_;
    delete this;
  }
  // From the expiry sweep (under the service's expiring_mu_, so this stream is alive).
  void Expire() { ctx_->TryCancel(); }

 private:
  void Authenticate() {
    if (grpc::Status s = CheckNodeName(report_.node()); !s.ok()) {
      Finish(s);
      return;
    }
    // The stream stays alive until Finish, so `this` outlives the callback.
    svc_->auth_.AuthorizeAgentAsync(*ctx_, report_.node(), [this](AgentGrant g) {
      if (!g.status.ok()) {
        Finish(g.status);
        return;
      }
      if (!svc_->Registered(report_.node())) {
        Finish(Status(
            grpc::StatusCode::FAILED_PRECONDITION,
            absl::StrCat("node '", report_.node(), "' has not registered; call Register first")));
        return;
      }
      node_ = report_.node();
      expires_ = g.expires;
      if (expires_ != absl::InfiniteFuture()) {
        tracked_ = true;
        svc_->Track(this, expires_);
      }
      Handle();
    });
  }
  void Handle() {
    if (svc_->state_.clock().Now() >= expires_) {
      Finish(Status(grpc::StatusCode::UNAUTHENTICATED,
                    absl::StrCat("the token this stream was opened with expired at ",
                                 absl::FormatTime(expires_),
                                 "; reconnect with the current (rotated) token")));
      return;
    }
    ack_.Clear();
    grpc::Status s = svc_->DoReport(node_, report_, &ack_);
    if (!s.ok()) {
      Finish(s);
      return;
    }
    StartWrite(&ack_);
  }

  AgentServiceImpl* svc_;
  grpc::CallbackServerContext* ctx_;
  std::string node_;
  absl::Time expires_ = absl::InfiniteFuture();
  bool tracked_ = false;
  v1::HealthReport report_;
  v1::HealthAck ack_;
};

AgentServiceImpl::AgentServiceImpl(DaemonState& state, HeartbeatMonitor& monitor,
                                   const Authenticator& auth, AgentServiceOptions options)
    : state_(state), monitor_(monitor), auth_(auth), options_(std::move(options)) {}

grpc::ServerUnaryReactor* AgentServiceImpl::Register(grpc::CallbackServerContext* ctx,
                                                     const v1::RegisterRequest* req,
                                                     v1::RegisterResponse* resp) {
  grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
  if (grpc::Status s = CheckNodeName(req->node()); !s.ok()) {
    r->Finish(s);
    return r;
  }
  // req and resp live until Finish.
  auth_.AuthorizeAgentAsync(*ctx, req->node(), [this, r, req, resp](AgentGrant g) {
    r->Finish(g.status.ok() ? DoRegister(*req, resp, g.expires) : g.status);
  });
  return r;
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportEvent(grpc::CallbackServerContext* ctx,
                                                        const v1::HealthReport* req,
                                                        v1::HealthAck* ack) {
  grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
  if (grpc::Status s = CheckNodeName(req->node()); !s.ok()) {
    r->Finish(s);
    return r;
  }
  auth_.AuthorizeAgentAsync(*ctx, req->node(), [this, r, req, ack](AgentGrant g) {
    if (!g.status.ok()) return r->Finish(g.status);
    if (!Registered(req->node())) {
      return r->Finish(
          Status(grpc::StatusCode::FAILED_PRECONDITION,
                 absl::StrCat("node '", req->node(), "' has not registered; call Register first")));
    }
    r->Finish(DoReport(req->node(), *req, ack));
  });
  return r;
}

grpc::ServerBidiReactor<v1::HealthReport, v1::HealthAck>* AgentServiceImpl::ReportHealth(
    grpc::CallbackServerContext* ctx) {
  return new HealthStream(this, ctx);
}

void AgentServiceImpl::Track(HealthStream* s, absl::Time expires) {
  std::lock_guard<std::mutex> lock(expiring_mu_);
  expiring_.insert({expires, s});
}

void AgentServiceImpl::Untrack(HealthStream* s, absl::Time expires) {
  std::lock_guard<std::mutex> lock(expiring_mu_);
  expiring_.erase({expires, s});
}

int AgentServiceImpl::EndExpiredStreams(absl::Time now) {
  std::lock_guard<std::mutex> lock(expiring_mu_);
  int n = 0;
  for (auto it = expiring_.begin(); it != expiring_.end() && it->first <= now;) {
    it->second->Expire();
    it = expiring_.erase(it);
    ++n;
  }
  return n;
}

bool AgentServiceImpl::Registered(absl::string_view node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return agents_.contains(node);
}

grpc::Status AgentServiceImpl::DoRegister(const v1::RegisterRequest& req,
                                          v1::RegisterResponse* resp, absl::Time expires) {
  if (req.agent_version().size() > 128 || req.driver_version().size() > 128) {
    return Status(grpc::StatusCode::INVALID_ARGUMENT, "version strings are at most 128 bytes");
  }
  if (req.gpus_size() > kMaxGpusPerAgent) {
    return Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("at most ", kMaxGpusPerAgent, " GPUs per node, got ", req.gpus_size()));
  }
  struct ModelNode {
    int index = -1, gpus = 0;
    std::string sku;
  };
  ModelNode mn = state_.With([&](GangScheduler& s) {
    ModelNode m;
    m.index = s.cluster().FindNode(req.node());
    if (m.index >= 0) {
      m.gpus = s.cluster().node(m.index).gpus;
      m.sku = s.cluster().SkuName(s.cluster().node(m.index).sku);
    }
    return m;
  });
  if (mn.index < 0) {
    return Status(grpc::StatusCode::NOT_FOUND,
                  absl::StrCat("node '", req.node(), "' is not in the daemon's cluster model"));
  }
  AgentRecord rec;
  std::set<int> seen;
  for (const v1::Gpu& g : req.gpus()) {
    if (g.index() < 0 || g.index() >= mn.gpus) {
      return Status(grpc::StatusCode::OUT_OF_RANGE,
                    absl::StrCat("GPU index ", g.index(), " out of range: node '", req.node(),
                                 "' has ", mn.gpus, " GPUs (indices 0..", mn.gpus - 1, ")"));
    }
    if (!seen.insert(g.index()).second) {
      return Status(grpc::StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("GPU index ", g.index(), " reported twice"));
    }
    if (g.uuid().size() > 128 || g.model().size() > 256 || g.fabric_cluster_uuid().size() > 128) {
      return Status(grpc::StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("GPU ", g.index(), ": uuid/model/fabric id too long"));
    }
    if (g.nvlink_active_links() < 0 || g.nvlink_active_links() > 64) {
      return Status(grpc::StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("GPU ", g.index(), ": nvlink_active_links must be 0..64"));
    }
    rec.uuid_by_index[g.index()] = g.uuid();
    if (!g.model().empty() &&
        !absl::StrContains(absl::AsciiStrToLower(g.model()), absl::AsciiStrToLower(mn.sku))) {
      resp->add_warnings(absl::StrCat("GPU ", g.index(), " is a '", g.model(),
                                      "' but the cluster model says ", mn.sku));
    }
  }
  if (req.gpus_size() != mn.gpus) {
    resp->add_warnings(absl::StrCat("agent reports ", req.gpus_size(),
                                    " GPUs, the cluster model has ", mn.gpus,
                                    "; missing GPUs are marked lost"));
  }
  rec.agent_version = req.agent_version();
  rec.driver_version = req.driver_version();
  rec.reported_gpus = req.gpus_size();
  for (int i = 0; i < mn.gpus; ++i) {
    if (!seen.count(i)) rec.missing.insert(i);
  }
  std::set<int> previously_missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = agents_.find(req.node());
    if (it != agents_.end()) {
      previously_missing = it->second.missing;
      rec.faults = it->second.faults;  // events stay until the agent reports recovery
    }
    agents_[req.node()] = rec;
  }
  for (int i : rec.missing) {
    (void)state_.SetGpuHealth(req.node(), i, true, "GPU lost: not reported by the node agent");
  }
  for (int i : previously_missing) {
    if (!rec.missing.count(i) && !rec.faults.count(i)) {
      (void)state_.SetGpuHealth(req.node(), i, false, "reported again by the node agent");
    }
  }
  monitor_.Seen(req.node());
  state_.Publish(
      {0, absl::Time(), "agent-registered", "", req.node(),
       absl::StrCat(req.gpus_size(), " GPUs, driver ", req.driver_version().substr(0, 32),
                    ", agent ", req.agent_version().substr(0, 32))});
  resp->set_heartbeat_interval_ms(absl::ToInt64Milliseconds(options_.heartbeat_interval));
  resp->set_heartbeat_window_ms(absl::ToInt64Milliseconds(monitor_.window()));
  resp->set_model_gpus(mn.gpus);
  if (req.datagram_heartbeats() && options_.datagrams != nullptr) {
    DatagramHeartbeats::Enrollment e = options_.datagrams->Enroll(req.node(), expires);
    resp->set_heartbeat_port(static_cast<uint32_t>(options_.datagrams->port()));
    resp->set_agent_id(e.agent_id);
    resp->set_epoch(e.epoch);
    resp->set_heartbeat_key(e.key);
  }
  return grpc::Status::OK;
}

grpc::Status AgentServiceImpl::DoReport(const std::string& node, const v1::HealthReport& report,
                                        v1::HealthAck* ack) {
  if (report.node() != node) {
    return Status(grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("stream started for node '", node, "', report names '",
                               report.node().substr(0, 253), "'"));
  }
  ack->set_heartbeat_interval_ms(absl::ToInt64Milliseconds(options_.heartbeat_interval));
  switch (report.body_case()) {
    case v1::HealthReport::kHeartbeat:
      monitor_.Seen(node);
      ack->set_seq(report.heartbeat().seq());
      return grpc::Status::OK;
    case v1::HealthReport::kGpuEvent:
      monitor_.Seen(node);
      return HandleGpuEvent(node, report.gpu_event(), ack);
    case v1::HealthReport::BODY_NOT_SET:
      break;
  }
  return Status(grpc::StatusCode::INVALID_ARGUMENT,
                "health report has neither heartbeat nor gpu_event");
}

grpc::Status AgentServiceImpl::HandleGpuEvent(absl::string_view node, const v1::GpuEvent& ev,
                                              v1::HealthAck* ack) {
  if (ev.detail().size() > 1024) {
    return Status(grpc::StatusCode::INVALID_ARGUMENT, "gpu_event detail longer than 1024 bytes");
  }
  if (ev.kind() == v1::GpuEvent::KIND_UNSPECIFIED || !v1::GpuEvent::Kind_IsValid(ev.kind())) {
    return Status(grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("gpu_event kind ", static_cast<int>(ev.kind()), " is not known"));
  }
  GpuEventDecision d =
      DecideGpuEvent(static_cast<GpuEventKind>(ev.kind()), ev.xid(), options_.fatal_xids);
  std::string reason = d.reason;
  if (!ev.detail().empty()) absl::StrAppend(&reason, ": ", ev.detail());
  absl::Status s;
  switch (d.verdict) {
    case GpuVerdict::kFatal:
      s = state_.SetGpuHealth(node, ev.gpu_index(), true, reason);
      if (s.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        agents_[node].faults[ev.gpu_index()] = reason;
      }
      ack->set_gpu_unhealthy(true);
      ack->set_action(absl::StrCat("marked unhealthy: ", d.reason));
      break;
    case GpuVerdict::kRecover: {
      bool missing = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        AgentRecord& rec = agents_[node];
        missing = rec.missing.count(ev.gpu_index()) > 0;
        if (!missing) rec.faults.erase(ev.gpu_index());
      }
      if (missing) {
        return Status(grpc::StatusCode::FAILED_PRECONDITION,
                      absl::StrCat("GPU ", ev.gpu_index(),
                                   " was not reported at Register; re-register to add it"));
      }
      s = state_.SetGpuHealth(node, ev.gpu_index(), false, reason);
      ack->set_gpu_unhealthy(false);
      ack->set_action("marked healthy");
      break;
    }
    case GpuVerdict::kRecord: {
      // Validate the index like the health calls do, then just record.
      int gpus = state_.With([&](GangScheduler& sc) {
        int n = sc.cluster().FindNode(node);
        return n < 0 ? 0 : sc.cluster().node(n).gpus;
      });
      if (ev.gpu_index() < 0 || ev.gpu_index() >= gpus) {
        s = absl::OutOfRangeError(
            absl::StrCat("node '", node, "' has ", gpus, " GPUs; no GPU index ", ev.gpu_index()));
        break;
      }
      const auto signal = SlownessSignalOf(static_cast<GpuEventKind>(ev.kind()));
      state_.Publish(
          {0, absl::Time(),
           signal ? (ev.kind() == v1::GpuEvent::THERMAL ? "gpu-thermal" : "gpu-slow") : "gpu-xid",
           "", std::string(node), absl::StrCat("gpu ", ev.gpu_index(), ": ", reason)});
      if (signal) {
        const absl::Time now = state_.clock().Now();
        const std::string name(node);
        if (state_.slow_nodes().Report(name, *signal, now)) {
          // Crossed the threshold: large gangs avoid the node from now on (docs/grpc.md).
          state_.Publish({0, absl::Time(), "node-slow", "", name,
                          absl::StrCat("slowness score ", state_.slow_nodes().Describe(name, now),
                                       "; large gangs avoid it")});
        }
      }
      ack->set_action(absl::StrCat("recorded (not fatal): ", d.reason));
      break;
    }
  }
  if (!s.ok()) return ToGrpcStatus(s);
  return grpc::Status::OK;
}

}  // namespace topogang
