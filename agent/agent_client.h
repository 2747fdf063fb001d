// The agent's connection to topogangd: Register, then heartbeats at the interval the daemon asks
// for and every GPU event as it happens. With a daemon that offers them (the default), heartbeats
// are signed UDP datagrams (agent/heartbeat_sender.h) and events single ReportEvent calls, each
// on a connection of its own, so nothing stays open; otherwise one ReportHealth stream carries
// both. On any failure, or when the
// daemon asks, it registers again (exponential backoff with jitter), so it survives daemon
// restarts and failovers; events raised while disconnected are queued and sent afterwards.
#pragma once

#include <grpcpp/channel.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/gpu_source.h"
#include "agent/heartbeat_sender.h"

namespace topogang::agent {

struct AgentOptions {
  std::string server;  // host:port
  std::string node;
  std::string token;  // sent as "authorization: Bearer TOKEN" when set
  // Or read from this file at every connect, and watched while connected: a projected
  // ServiceAccount token is rotated by the kubelet (at 80% of its lifetime), and when the file
  // changes the agent reconnects with the new token before the old one expires.
  std::string token_file;
  absl::Duration token_check_interval = absl::Seconds(10);
  // Ask for datagram heartbeats (a daemon that does not offer them gets a stream).
  bool datagram_heartbeats = true;
  // TLS: ca_file set = TLS, verifying the daemon against it; cert+key = client certificate.
  std::string ca_file, cert_file, key_file;
  std::string tls_server_name;  // overrides the name checked in the daemon's certificate
  absl::Duration min_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
  std::string version = "topogang-agent/0.1.0";
  std::function<void(const std::string&)> log;  // default: stderr
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeAgentChannel(const AgentOptions& o);

class AgentClient {
 public:
  AgentClient(AgentOptions options, GpuSource& source);
  ~AgentClient();

  // Starts the event pump and the connection loop threads.
  void Start();
  // Stops both and returns when they have ended.
  void Stop();

  int64_t registrations() const { return registrations_.load(); }
  int64_t acks() const { return acks_.load(); }
  int64_t events_sent() const { return events_sent_.load(); }
  int64_t heartbeats_sent() const { return heartbeats_sent_.load(); }  // datagrams
  // The last session error ("" when none yet).
  std::string last_error() const;

 private:
  void ConnectLoop();
  void PumpEvents();
  // One Register + stream; returns why it ended. *rotated: it ended because the token changed.
  absl::Status Session(std::shared_ptr<grpc::Channel> channel, bool* registered, bool* rotated);
  // Heartbeats as datagrams through `sender`, events as ReportEvent calls, until stopped, the
  // token file changes (*rotated) or something fails.
  absl::Status DatagramSession(HeartbeatSender& sender, absl::Duration interval,
                               const std::string& token, bool* rotated);
  // options_.token, or the token file's content (trimmed).
  absl::StatusOr<std::string> CurrentToken() const;
  void Log(const std::string& line);

  AgentOptions options_;
  GpuSource& source_;
  std::thread connect_thread_, pump_thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::deque<GpuEventInfo> pending_;
  std::string last_error_;
  std::atomic<int64_t> registrations_{0}, acks_{0}, events_sent_{0}, heartbeats_sent_{0};
  // Datagrams got no answer once: streams from then on (set and read on the connect thread).
  bool datagrams_blocked_ = false;
  static constexpr uint64_t kConfirmAttempts = 5;
};

}  // namespace topogang::agent
