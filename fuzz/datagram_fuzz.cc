// libFuzzer target for the agents' heartbeat datagrams (common/heartbeat_datagram.h) as topogangd
// receives them from the network: any bytes from any source. DatagramHeartbeats::Handle must never
// crash, never take a datagram without the registration's key as a sign of life, and answer only
// with the two short shapes (no amplification). Round trips of well-formed datagrams must hold.
//   bash scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "api/datagram_heartbeats.h"
#include "api/heartbeat_monitor.h"
#include "common/heartbeat_datagram.h"
#include "daemon/daemon_state.h"
#include "scheduler/clock.h"
#include "topology/cluster.h"
#include "topology/topology_config.h"

namespace {

using namespace topogang;

Cluster EmptyCluster() {
  auto topology = PresetTopology("auto");
  if (!topology.ok()) std::abort();
  auto c = Cluster::Build(ClusterSpec{}, *topology);
  if (!c.ok()) std::abort();
  return *std::move(c);
}

struct World {
  World() : state(GangScheduler(EmptyCluster()), clock), monitor(state, absl::Seconds(30)) {
    DatagramHeartbeatOptions o;
    o.host = "127.0.0.1";
    auto d = DatagramHeartbeats::Start(monitor, clock, o);
    if (!d.ok()) std::abort();
    dgrams = std::move(*d);
    enrolled = dgrams->Enroll("node-a", absl::InfiniteFuture());
  }
  FakeClock clock;
  DaemonState state;
  HeartbeatMonitor monitor;
  std::unique_ptr<DatagramHeartbeats> dgrams;
  DatagramHeartbeats::Enrollment enrolled;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* w = new World();
  if (size > 4096) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // Raw bytes: whatever they are, no sign of life without the key, and only short answers.
  const int64_t accepted = w->dgrams->counters().accepted;
  const std::string reply = w->dgrams->Handle(bytes);
  if (w->dgrams->counters().accepted != accepted) std::abort();  // forged bytes were taken
  if (reply.size() > kReregisterDatagramSize) std::abort();
  if (!reply.empty() && !DecodeReregisterDatagram(reply) && !DecodeAckDatagram(reply)) std::abort();
  // The parsers alone.
  if (auto d = PeekHeartbeatDatagram(bytes)) {
    if (size != kHeartbeatDatagramSize) std::abort();
    if (VerifyHeartbeatDatagram(bytes, w->enrolled.key) &&
        EncodeHeartbeatDatagram(*d, w->enrolled.key) != bytes) {
      std::abort();  // two different datagrams verify under one key
    }
  }
  (void)DecodeAckDatagram(bytes);
  (void)DecodeReregisterDatagram(bytes);
  // A well-formed datagram of the input's fields, signed with the right key, round-trips and is
  // taken once: a second copy is a replay.
  if (size >= 12) {
    HeartbeatDatagram d;
    d.agent_id = w->enrolled.agent_id;
    d.epoch = w->enrolled.epoch;
    std::memcpy(&d.seq, data + 4, sizeof(d.seq));
    const std::string good = EncodeHeartbeatDatagram(d, w->enrolled.key);
    auto back = PeekHeartbeatDatagram(good);
    if (!back || back->seq != d.seq || back->agent_id != d.agent_id || back->epoch != d.epoch ||
        !VerifyHeartbeatDatagram(good, w->enrolled.key)) {
      std::abort();
    }
    (void)w->dgrams->Handle(good);
    const int64_t after = w->dgrams->counters().accepted;
    (void)w->dgrams->Handle(good);
    if (w->dgrams->counters().accepted != after) std::abort();  // a replay was taken
  }
  return 0;
}
