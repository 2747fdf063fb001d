// topogangd's end of the agents' datagram heartbeats (common/heartbeat_datagram.h): one UDP
// socket (on the gRPC port by default), the registrations whose keys sign the datagrams, and one
// thread that drains the socket once per `batch`, so 1,250 heartbeats/s cost about 20 wakeups/s
// instead of 1,250 callbacks (docs/benchmarks.md). A valid datagram is a sign of life for its node
// (HeartbeatMonitor::Seen); a forged (bad MAC), replayed (seq not increasing) or malformed one
// changes nothing; one for an unknown, replaced or expired registration is answered "register
// again" (rate-limited, smaller than the datagram: no amplification), and a registration's first
// valid one is acknowledged. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/heartbeat_monitor.h"
#include "scheduler/clock.h"

namespace topogang {

struct DatagramHeartbeatOptions {
  std::string host = "127.0.0.1";  // the address to bind (the gRPC address's host)
  int port = 0;                    // 0 = chosen by the OS
  // How long the thread lets datagrams accumulate between drains. Liveness is judged over a
  // window of tens of seconds, so 50 ms of delay costs nothing and saves a wakeup per datagram.
  absl::Duration batch = absl::Milliseconds(50);
  int max_replies_per_second = 1000;  // "register again" answers, all sources together
};

class DatagramHeartbeats {
 public:
  // Binds the socket and starts the thread. `monitor` and `clock` must outlive this.
  static absl::StatusOr<std::unique_ptr<DatagramHeartbeats>> Start(HeartbeatMonitor& monitor,
                                                                   const Clock& clock,
                                                                   DatagramHeartbeatOptions o);
  ~DatagramHeartbeats();
  DatagramHeartbeats(const DatagramHeartbeats&) = delete;
  DatagramHeartbeats& operator=(const DatagramHeartbeats&) = delete;

  int port() const { return port_; }

  struct Enrollment {
    uint32_t agent_id = 0;
    uint32_t epoch = 0;
    std::string key;
  };
  // A registration of `node`'s agent, replacing any earlier one (its datagrams are then answered
  // "register again"); its datagrams count until `expires` (the credentials' expiry).
  Enrollment Enroll(const std::string& node, absl::Time expires);

  // Handles one datagram as the thread does; returns the answer to send back ("" = none). For
  // tests and the fuzz target.
  std::string Handle(absl::string_view bytes);

  struct Counters {
    int64_t accepted = 0, forged = 0, replayed = 0, stale = 0, malformed = 0, replies = 0;
  };
  Counters counters() const;
  // Blocks until `n` datagrams (any outcome) were handled since start, or `limit` passes.
  bool WaitHandled(int64_t n, absl::Duration limit);
  void Stop();  // idempotent

 private:
  DatagramHeartbeats(HeartbeatMonitor& monitor, const Clock& clock, DatagramHeartbeatOptions o)
      : monitor_(monitor), clock_(clock), options_(std::move(o)) {}
  void Loop();
  void Drain(double* reply_budget);

  struct Entry {
    std::string node;
    std::string key;
    uint32_t epoch = 0;
    uint64_t last_seq = 0;
    absl::Time expires;
  };

  HeartbeatMonitor& monitor_;
  const Clock& clock_;
  const DatagramHeartbeatOptions options_;
  int fd_ = -1, wake_fd_ = -1, port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  mutable std::mutex mu_;                           // guards entries_, ids_, next_epoch_
  std::vector<Entry> entries_;                      // by agent id
  absl::flat_hash_map<std::string, uint32_t> ids_;  // node -> agent id (stable while running)
  uint32_t next_epoch_ = 0;  // starts random: a restarted daemon never reuses an epoch

  std::atomic<int64_t> accepted_{0}, forged_{0}, replayed_{0}, stale_{0}, malformed_{0},
      replies_{0}, handled_{0};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
};

}  // namespace topogang
