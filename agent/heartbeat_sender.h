// The agent's end of datagram heartbeats (common/heartbeat_datagram.h): a UDP socket connected
// to the daemon's host on the port Register announced (so the kernel drops datagrams from anyone
// else), sending signed heartbeats and noticing when the daemon asks this registration to
// register again, or when nothing listens there any more (ICMP port unreachable).
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace topogang::agent {

class HeartbeatSender {
 public:
  // `server`: the gRPC target ("host:port", "[v6]:port", optionally "dns:///" first); the
  // datagrams go to its host on `udp_port`.
  static absl::StatusOr<std::unique_ptr<HeartbeatSender>> Open(const std::string& server,
                                                               int udp_port, uint32_t agent_id,
                                                               uint32_t epoch, std::string key);
  ~HeartbeatSender();
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;

  // Sends the next heartbeat (seq 1, 2, ...). UNAVAILABLE when the daemon asked to register again
  // (reregister_asked()) or nothing listens on the port (an ICMP port unreachable came back).
  absl::Status Send();
  bool reregister_asked() const { return reregister_asked_; }
  uint64_t sent() const { return seq_; }
  // The daemon acknowledged a datagram of this registration: they get through.
  bool confirmed() const { return confirmed_; }

 private:
  HeartbeatSender(int fd, uint32_t agent_id, uint32_t epoch, std::string key)
      : fd_(fd), agent_id_(agent_id), epoch_(epoch), key_(std::move(key)) {}
  // What arrived since the last call: UNAVAILABLE for "register again" or a refused port.
  absl::Status CheckAnswers();
  int fd_;
  uint32_t agent_id_, epoch_;
  std::string key_;
  uint64_t seq_ = 0;
  bool confirmed_ = false;
  bool reregister_asked_ = false;
};

}  // namespace topogang::agent
