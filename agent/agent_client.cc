#include "agent/agent_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <iostream>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/heartbeat_sender.h"
#include "common/file_util.h"
#include "topogang/v1/agent.grpc.pb.h"

namespace topogang::agent {

namespace v1 = ::topogang::v1;

namespace {

// One GPU event as the daemon takes it, on a stream or as a ReportEvent call.
v1::HealthReport EventReport(const std::string& node, const GpuEventInfo& ev) {
  v1::HealthReport rep;
  rep.set_node(node);
  v1::GpuEvent* e = rep.mutable_gpu_event();
  e->set_gpu_index(ev.gpu_index);
  e->set_kind(static_cast<v1::GpuEvent::Kind>(ev.kind));
  e->set_xid(ev.xid);
  e->set_detail(ev.detail);
  return rep;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeAgentChannel(const AgentOptions& o) {
  grpc::ChannelArguments args;
  // Keepalive notices a dead daemon (or a broken network path) while a call is open (a stream,
  // an event report). With datagram heartbeats the agent keeps no connection between calls.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  if (!o.tls_server_name.empty()) args.SetSslTargetNameOverride(o.tls_server_name);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (o.ca_file.empty() && o.cert_file.empty()) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    if (!o.ca_file.empty()) {
      auto ca = ReadFileToString(o.ca_file);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
    }
    if (!o.cert_file.empty() || !o.key_file.empty()) {
      auto cert = ReadFileToString(o.cert_file);
      if (!cert.ok()) return cert.status();
      auto key = ReadFileToString(o.key_file);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    creds = grpc::SslCredentials(ssl);
  }
  return grpc::CreateCustomChannel(o.server, creds, args);
}

AgentClient::AgentClient(AgentOptions options, GpuSource& source)
    : options_(std::move(options)), source_(source) {}

AgentClient::~AgentClient() { Stop(); }

void AgentClient::Start() {
  pump_thread_ = std::thread([this] { PumpEvents(); });
  connect_thread_ = std::thread([this] { ConnectLoop(); });
}

void AgentClient::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (connect_thread_.joinable()) connect_thread_.join();
  if (pump_thread_.joinable()) pump_thread_.join();
}

std::string AgentClient::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void AgentClient::Log(const std::string& line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "topogang-agent: " << line << std::endl;
  }
}

void AgentClient::PumpEvents() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    std::optional<GpuEventInfo> ev = source_.WaitEvent(absl::Milliseconds(200));
    if (!ev) continue;
    Log(absl::StrCat("GPU ", ev->gpu_index, " event kind ", static_cast<int>(ev->kind),
                     ev->kind == GpuEventKind::kXid ? absl::StrCat(" XID ", ev->xid) : "", " ",
                     ev->detail));
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(std::move(*ev));
    }
    cv_.notify_all();
  }
}

absl::Status AgentClient::DatagramSession(HeartbeatSender& sender, absl::Duration interval,
                                          const std::string& token, bool* rotated) {
  absl::Time next_beat = absl::Now();  // first heartbeat at once
  absl::Time next_token_check = absl::Now() + options_.token_check_interval;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!options_.token_file.empty() && absl::Now() >= next_token_check) {
      lock.unlock();
      auto now_token = CurrentToken();  // unreadable for a moment: keep the old one
      next_token_check = absl::Now() + options_.token_check_interval;
      if (now_token.ok() && !now_token->empty() && *now_token != token) {
        *rotated = true;  // register again with it (nothing is in flight between calls)
        return absl::OkStatus();
      }
      lock.lock();
      continue;
    }
    if (!pending_.empty()) {
      GpuEventInfo ev = pending_.front();
      lock.unlock();
      const v1::HealthReport rep = EventReport(options_.node, ev);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
      v1::HealthAck ack;
      auto channel = MakeAgentChannel(options_);  // a connection for this event only
      if (!channel.ok()) return channel.status();
      grpc::Status st = v1::AgentService::NewStub(*channel)->ReportEvent(&ctx, rep, &ack);
      if (!st.ok()) {  // stays queued: sent again after registering again
        return absl::UnavailableError(absl::StrCat("ReportEvent: ", st.error_message(), " (",
                                                   static_cast<int>(st.error_code()), ")"));
      }
      if (!ack.action().empty()) Log("daemon: " + ack.action());
      lock.lock();
      pending_.pop_front();
      ++events_sent_;
      ++acks_;
      continue;
    }
    if (absl::Now() >= next_beat) {
      lock.unlock();
      absl::Status s = sender.Send();
      // Until the daemon confirms that datagrams arrive, send them every second at most; when
      // they are refused, or kConfirmAttempts of them get no answer (UDP blocked on the way),
      // fall back to a stream. Once confirmed, a failure means: register again.
      if (!sender.confirmed() && !sender.reregister_asked() &&
          (!s.ok() || sender.sent() > kConfirmAttempts)) {
        datagrams_blocked_ = true;
        return absl::UnavailableError(absl::StrCat(
            "heartbeat datagrams to the daemon get no answer (",
            s.ok() ? absl::StrCat(kConfirmAttempts, " sent") : std::string(s.message()),
            "; is UDP to its gRPC port blocked by a firewall or NetworkPolicy?); using a "
            "ReportHealth stream instead"));
      }
      if (!s.ok()) return s;
      ++heartbeats_sent_;
      next_beat =
          absl::Now() + (sender.confirmed() ? interval : std::min(interval, absl::Seconds(1)));
      lock.lock();
      continue;
    }
    absl::Time wake = next_beat;
    if (!options_.token_file.empty()) wake = std::min(wake, next_token_check);
    cv_.wait_for(lock, absl::ToChronoNanoseconds(wake - absl::Now()));
  }
  return absl::CancelledError("agent stopping");
}

absl::StatusOr<std::string> AgentClient::CurrentToken() const {
  if (options_.token_file.empty()) return options_.token;
  auto t = ReadFileToString(options_.token_file, 1 << 20);
  if (!t.ok()) return t.status();
  return std::string(absl::StripAsciiWhitespace(*t));
}

void AgentClient::ConnectLoop() {
  std::mt19937_64 rng(std::random_device{}());
  absl::Duration backoff = options_.min_backoff;
  for (;;) {
    absl::Status s;
    bool registered = false, rotated = false;
    auto channel = MakeAgentChannel(options_);
    if (!channel.ok()) {
      s = channel.status();
    } else {
      s = Session(*std::move(channel), &registered, &rotated);
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    last_error_ = s.ToString();
    if (rotated) {  // not a failure: reconnect at once with the new token
      lock.unlock();
      Log("token file changed; reconnecting with the new token");
      backoff = options_.min_backoff;
      continue;
    }
    if (registered) backoff = options_.min_backoff;  // it worked for a while: start over
    // Full jitter in [backoff/2, backoff] keeps 10k agents from reconnecting in lockstep.
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    absl::Duration wait = backoff * jitter(rng);
    lock.unlock();
    Log(absl::StrCat("disconnected (", s.ToString(), "); retrying in ",
                     absl::FormatDuration(wait)));
    lock.lock();
    cv_.wait_for(lock, absl::ToChronoNanoseconds(wait), [&] { return stop_; });
    if (stop_) return;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

absl::Status AgentClient::Session(std::shared_ptr<grpc::Channel> channel, bool* registered,
                                  bool* rotated) {
  auto stub = v1::AgentService::NewStub(channel);
  auto token = CurrentToken();
  if (!token.ok()) return token.status();
  auto gpus = source_.Discover();
  if (!gpus.ok()) return gpus.status();
  v1::RegisterRequest reg;
  reg.set_node(options_.node);
  reg.set_agent_version(options_.version);
  reg.set_driver_version(source_.DriverVersion());
  reg.set_datagram_heartbeats(options_.datagram_heartbeats && !datagrams_blocked_);
  for (const GpuInfo& g : *gpus) {
    v1::Gpu* p = reg.add_gpus();
    p->set_index(g.index);
    p->set_uuid(g.uuid);
    p->set_model(g.model);
    p->set_memory_bytes(g.memory_bytes);
    p->set_nvlink_active_links(g.nvlink_active_links);
    p->set_fabric_cluster_uuid(g.fabric_cluster_uuid);
    p->set_fabric_clique_id(g.fabric_clique_id);
  }
  v1::RegisterResponse rr;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ctx.set_wait_for_ready(false);
    if (!token->empty()) ctx.AddMetadata("authorization", "Bearer " + *token);
    grpc::Status st = stub->Register(&ctx, reg, &rr);
    if (!st.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                          absl::StrCat("Register: ", st.error_message()));
    }
  }
  *registered = true;
  ++registrations_;
  for (const std::string& w : rr.warnings()) Log("daemon warns: " + w);
  std::atomic<int64_t> interval_ms{std::max<int64_t>(rr.heartbeat_interval_ms(), 100)};
  Log(absl::StrCat("registered node ", options_.node, " with ", gpus->size(),
                   " GPUs; heartbeat every ", interval_ms.load(), " ms",
                   rr.heartbeat_port() != 0
                       ? absl::StrCat(" as datagrams to UDP port ", rr.heartbeat_port())
                       : " on a stream"));
  if (rr.heartbeat_port() != 0) {
    auto sender = HeartbeatSender::Open(options_.server, static_cast<int>(rr.heartbeat_port()),
                                        rr.agent_id(), rr.epoch(), rr.heartbeat_key());
    if (!sender.ok()) return sender.status();
    // Nothing more to say until an event: let the connection go, so that the daemon holds no
    // connection per agent (12,500 idle ones cost it ~260 MiB; docs/benchmarks.md).
    stub.reset();
    channel.reset();
    return DatagramSession(**sender, absl::Milliseconds(interval_ms.load()), *token, rotated);
  }

  grpc::ClientContext sctx;
  if (!token->empty()) sctx.AddMetadata("authorization", "Bearer " + *token);
  auto stream = stub->ReportHealth(&sctx);
  std::atomic<bool> reader_done{false};
  std::thread reader([&] {
    v1::HealthAck ack;
    while (stream->Read(&ack)) {
      ++acks_;
      if (ack.heartbeat_interval_ms() >= 100) interval_ms = ack.heartbeat_interval_ms();
      if (!ack.action().empty()) Log("daemon: " + ack.action());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);  // no lost wakeup for the writer below
      reader_done = true;
    }
    cv_.notify_all();
  });

  uint64_t seq = 0;
  absl::Time next_beat = absl::Now();  // first heartbeat at once
  absl::Time next_token_check = absl::Now() + options_.token_check_interval;
  bool broken = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_ && !reader_done && !broken && !*rotated) {
    if (!options_.token_file.empty() && absl::Now() >= next_token_check) {
      lock.unlock();
      auto now_token = CurrentToken();  // unreadable for a moment: keep the old one
      *rotated = now_token.ok() && !now_token->empty() && *now_token != *token;
      next_token_check = absl::Now() + options_.token_check_interval;
      lock.lock();
      continue;
    }
    if (!pending_.empty()) {
      GpuEventInfo ev = pending_.front();
      lock.unlock();
      const v1::HealthReport rep = EventReport(options_.node, ev);
      broken = !stream->Write(rep);
      lock.lock();
      if (!broken) {
        pending_.pop_front();  // only once sent: survives reconnects otherwise
        ++events_sent_;
      }
      continue;
    }
    if (absl::Now() >= next_beat) {
      lock.unlock();
      v1::HealthReport rep;
      rep.set_node(options_.node);
      rep.mutable_heartbeat()->set_seq(++seq);
      rep.mutable_heartbeat()->set_sent_unix_ms(absl::ToUnixMillis(absl::Now()));
      broken = !stream->Write(rep);
      next_beat = absl::Now() + absl::Milliseconds(interval_ms.load());
      lock.lock();
      continue;
    }
    absl::Time wake = next_beat;
    if (!options_.token_file.empty()) wake = std::min(wake, next_token_check);
    cv_.wait_for(lock, absl::ToChronoNanoseconds(wake - absl::Now()));
  }
  const bool stopping = stop_;
  if (*rotated && !stopping && !broken) {
    // Half-close and let the daemon answer what is in flight (an event just written), so a
    // rotation loses nothing; a daemon that does not answer in time is cut off below.
    lock.unlock();
    stream->WritesDone();
    lock.lock();
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return reader_done.load() || stop_; });
  }
  lock.unlock();
  sctx.TryCancel();
  reader.join();
  grpc::Status st = stream->Finish();
  if (stopping) return absl::CancelledError("agent stopping");
  if (*rotated) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("health stream ended: ", st.error_message(), " (",
                                             static_cast<int>(st.error_code()), ")"));
}

}  // namespace topogang::agent
