// topogang.v1.AgentService: node agents register their GPUs and stream heartbeats and GPU
// events. Callback API, so 10k+ idle agent streams cost no threads. Fatal events flip the GPU's
// health bit in the DaemonState at once (with the core's re-planning); the HeartbeatMonitor
// handles silence. Agents that can send datagram heartbeats (common/heartbeat_datagram.h) get a
// key at Register and hold no call open: their GPU events come as ReportEvent calls. Agents are
// authenticated off the callback threads (Authenticator's async path)
// and a stream opened with an expiring token (a projected ServiceAccount token) is ended when the
// token expires, so the agent reconnects with its rotated one.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "api/datagram_heartbeats.h"
#include "api/heartbeat_monitor.h"
#include "api/identity.h"
#include "daemon/daemon_state.h"
#include "topogang/v1/agent.grpc.pb.h"

namespace topogang {

struct AgentServiceOptions {
  absl::Duration heartbeat_interval = absl::Seconds(10);
  std::set<uint32_t> fatal_xids;
  // Offered to agents that ask (RegisterRequest.datagram_heartbeats); null = streams only.
  DatagramHeartbeats* datagrams = nullptr;
};

// What the daemon knows about one node's agent.
struct AgentRecord {
  std::string agent_version, driver_version;
  int reported_gpus = 0;
  std::map<int, std::string> uuid_by_index;
  std::set<int> missing;  // GPUs the model has but the agent did not report (marked faulty)
  std::map<int, std::string> faults;  // GPUs marked faulty by agent events, with the reason
};

class AgentServiceImpl final : public ::topogang::v1::AgentService::CallbackService {
 public:
  AgentServiceImpl(DaemonState& state, HeartbeatMonitor& monitor, const Authenticator& auth,
                   AgentServiceOptions options);

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* ctx,
                                     const v1::RegisterRequest* req,
                                     v1::RegisterResponse* resp) override;
  grpc::ServerBidiReactor<v1::HealthReport, v1::HealthAck>* ReportHealth(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* ReportEvent(grpc::CallbackServerContext* ctx,
                                        const v1::HealthReport* req, v1::HealthAck* ack) override;

  // The logic after authentication, separate from the reactors. `expires`: when the caller's
  // credentials do (a datagram registration ends then).
  grpc::Status DoRegister(const v1::RegisterRequest& req, v1::RegisterResponse* resp,
                          absl::Time expires = absl::InfiniteFuture());
  // One report on an authenticated stream for `node`.
  grpc::Status DoReport(const std::string& node, const v1::HealthReport& report,
                        v1::HealthAck* ack);

  // Cancels every stream whose credentials expired at or before `now`; returns how many. The
  // server calls it with the monitor's period; a report on an expired stream is refused at once.
  int EndExpiredStreams(absl::Time now);

  bool Registered(absl::string_view node) const;
  size_t active_streams() const { return active_streams_.load(); }

 private:
  class HealthStream;
  grpc::Status HandleGpuEvent(absl::string_view node, const v1::GpuEvent& ev, v1::HealthAck* ack);
  void Track(HealthStream* s, absl::Time expires);
  void Untrack(HealthStream* s, absl::Time expires);

  DaemonState& state_;
  HeartbeatMonitor& monitor_;
  const Authenticator& auth_;
  const AgentServiceOptions options_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, AgentRecord> agents_;
  std::atomic<size_t> active_streams_{0};
  // Authenticated streams whose credentials expire, soonest first. A stream leaves the set in
  // OnDone, under expiring_mu_, before it is deleted, so the sweep never touches a dead one.
  std::mutex expiring_mu_;
  std::set<std::pair<absl::Time, HealthStream*>> expiring_;
};

}  // namespace topogang
