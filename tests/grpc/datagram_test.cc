// Datagram heartbeats over loopback: the wire format (common/heartbeat_datagram.h), the daemon's
// receiver (api/datagram_heartbeats.h) on a real UDP socket judged by the HeartbeatMonitor and the
// FakeClock (a silent node is lost after the window, forged and replayed datagrams change
// nothing, stale registrations are told to register again), and real agents: a GPU fault still
// flips at once, an agent whose datagrams are refused falls back to a stream.
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent_client.h"
#include "agent/fake_source.h"
#include "common/heartbeat_datagram.h"
#include "tests/grpc/grpc_test_env.h"
#include "topogang/v1/agent.grpc.pb.h"

namespace topogang {
namespace {

using testing::GrpcTestEnv;
using ::testing::HasSubstr;
namespace v1 = ::topogang::v1;

TEST(HeartbeatDatagramTest, RoundTripAndEveryByteIsChecked) {
  const std::string key = NewHeartbeatKey();
  ASSERT_EQ(key.size(), kHeartbeatKeySize);
  EXPECT_NE(key, NewHeartbeatKey());
  const std::string d = EncodeHeartbeatDatagram({7, 0xfffffffe, 1ull << 40}, key);
  ASSERT_EQ(d.size(), kHeartbeatDatagramSize);
  auto p = PeekHeartbeatDatagram(d);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->agent_id, 7u);
  EXPECT_EQ(p->epoch, 0xfffffffeu);
  EXPECT_EQ(p->seq, 1ull << 40);
  EXPECT_TRUE(VerifyHeartbeatDatagram(d, key));
  EXPECT_FALSE(VerifyHeartbeatDatagram(d, NewHeartbeatKey()));
  for (size_t i = 4; i < d.size(); ++i) {  // id, epoch, seq and MAC: one flipped bit fails
    std::string bad = d;
    bad[i] ^= 0x10;
    EXPECT_FALSE(VerifyHeartbeatDatagram(bad, key)) << "byte " << i;
  }
  EXPECT_FALSE(PeekHeartbeatDatagram(d.substr(0, 35)));
  EXPECT_FALSE(PeekHeartbeatDatagram(d + "x"));
  EXPECT_FALSE(PeekHeartbeatDatagram("TGX1" + d.substr(4)));
  EXPECT_FALSE(VerifyHeartbeatDatagram(d, ""));
  EXPECT_EQ(DecodeReregisterDatagram(EncodeReregisterDatagram(9)), 9u);
  EXPECT_EQ(DecodeAckDatagram(EncodeAckDatagram(9)), 9u);
  EXPECT_FALSE(DecodeAckDatagram(EncodeReregisterDatagram(9)));
  EXPECT_FALSE(DecodeReregisterDatagram("TGR1abc"));
}

// A test "agent" on a UDP socket next to the real server.
class DatagramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd_, 0);
    ASSERT_NE(env.server->datagrams(), nullptr);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(env.server->datagrams()->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  }
  void TearDown() override { close(fd_); }

  v1::RegisterResponse Register(const std::string& node) {
    auto stub = v1::AgentService::NewStub(env.Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::RegisterRequest req;
    req.set_node(node);
    req.set_datagram_heartbeats(true);
    for (int i = 0; i < 8; ++i) req.add_gpus()->set_index(i);
    v1::RegisterResponse resp;
    EXPECT_TRUE(stub->Register(&ctx, req, &resp).ok());
    return resp;
  }
  // Sends `d` and waits until the receiver handled it; returns its answer ("" = none).
  std::string Send(const std::string& d) {
    const int64_t before = handled_++;
    EXPECT_EQ(send(fd_, d.data(), d.size(), 0), static_cast<ssize_t>(d.size()));
    EXPECT_TRUE(env.server->datagrams()->WaitHandled(before + 1, absl::Seconds(20)));
    char buf[64];
    pollfd p = {fd_, POLLIN, 0};
    // An answer is sent in the same drain as the datagram was handled: it is already queued.
    if (poll(&p, 1, 20) <= 0) return "";
    const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  std::string Beat(const v1::RegisterResponse& r, uint64_t seq, const std::string& key = "") {
    return Send(EncodeHeartbeatDatagram({r.agent_id(), r.epoch(), seq},
                                        key.empty() ? r.heartbeat_key() : key));
  }
  uint8_t Health(const std::string& node) { return env.state->NodeHealthSources(node); }

  GrpcTestEnv env;
  int fd_ = -1;
  int64_t handled_ = 0;
};

TEST_F(DatagramTest, DatagramsKeepTheNodeAliveAndSilenceMarksItWithinTheWindow) {
  v1::RegisterResponse r = Register("lab-a1");
  ASSERT_EQ(r.heartbeat_port(), static_cast<uint32_t>(env.server->datagrams()->port()));
  ASSERT_EQ(r.heartbeat_key().size(), kHeartbeatKeySize);
  HeartbeatMonitor& mon = env.server->monitor();
  // The first datagram of a registration is acknowledged, later ones are not.
  EXPECT_EQ(DecodeAckDatagram(Beat(r, 1)), r.agent_id());
  env.clock.Advance(absl::Seconds(4));
  EXPECT_EQ(Beat(r, 2), "");
  env.clock.Advance(absl::Seconds(5));  // exactly the window since the last datagram
  EXPECT_EQ(mon.CheckNow(), 0);
  env.clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(mon.CheckNow(), 1);
  EXPECT_EQ(Health("lab-a1"), static_cast<uint8_t>(HealthSource::kAgentLost));

  // Forged (another key) and replayed (an old seq) datagrams do not bring it back.
  EXPECT_EQ(Beat(r, 3, NewHeartbeatKey()), "");
  EXPECT_EQ(Beat(r, 2), "");
  EXPECT_EQ(Health("lab-a1"), static_cast<uint8_t>(HealthSource::kAgentLost));
  EXPECT_EQ(Send("not a heartbeat"), "");
  const auto c = env.server->datagrams()->counters();
  EXPECT_EQ(c.forged, 1);
  EXPECT_EQ(c.replayed, 1);
  EXPECT_EQ(c.malformed, 1);
  // A genuine one does.
  EXPECT_EQ(Beat(r, 3), "");
  EXPECT_EQ(Health("lab-a1"), 0);
}

TEST_F(DatagramTest, StaleRegistrationsAreToldToRegisterAgain) {
  v1::RegisterResponse old = Register("lab-a2");
  EXPECT_EQ(DecodeAckDatagram(Beat(old, 1)), old.agent_id());
  v1::RegisterResponse now = Register("lab-a2");  // the agent restarted: a new epoch and key
  EXPECT_EQ(now.agent_id(), old.agent_id());
  EXPECT_NE(now.epoch(), old.epoch());
  EXPECT_EQ(DecodeReregisterDatagram(Beat(old, 2)), old.agent_id());
  EXPECT_EQ(DecodeAckDatagram(Beat(now, 1)), now.agent_id());
  // An id this daemon never gave out (an earlier daemon's): register again.
  EXPECT_EQ(DecodeReregisterDatagram(Send(EncodeHeartbeatDatagram({999, 1, 1}, NewHeartbeatKey()))),
            999u);
  // Credentials that expired (a projected token's exp) end the registration's datagrams.
  DatagramHeartbeats::Enrollment e =
      env.server->datagrams()->Enroll("lab-a3", env.clock.Now() + absl::Seconds(1));
  v1::RegisterResponse r3;
  r3.set_agent_id(e.agent_id);
  r3.set_epoch(e.epoch);
  r3.set_heartbeat_key(e.key);
  EXPECT_EQ(DecodeAckDatagram(Beat(r3, 1)), e.agent_id);
  env.clock.Advance(absl::Seconds(1));
  EXPECT_EQ(DecodeReregisterDatagram(Beat(r3, 2)), e.agent_id);
}

TEST_F(DatagramTest, AgentsWithoutDatagramsGetNoKey) {
  auto stub = v1::AgentService::NewStub(env.Channel());
  grpc::ClientContext ctx;
  v1::RegisterRequest req;
  req.set_node("lab-b1");
  v1::RegisterResponse resp;
  ASSERT_TRUE(stub->Register(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.heartbeat_port(), 0u);
  EXPECT_TRUE(resp.heartbeat_key().empty());
}

struct Agent {
  Agent(const GrpcTestEnv& env, const std::string& node) : gpus(8, "NVIDIA H100 80GB HBM3", node) {
    agent::AgentOptions o;
    o.server = env.target();
    o.node = node;
    o.min_backoff = absl::Milliseconds(20);
    o.max_backoff = absl::Milliseconds(200);
    o.log = [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu);
      log += l + "\n";
    };
    client = std::make_unique<agent::AgentClient>(o, gpus);
    client->Start();
  }
  std::string Log() {
    std::lock_guard<std::mutex> lock(mu);
    return log;
  }
  agent::FakeGpuSource gpus;
  std::mutex mu;
  std::string log;
  std::unique_ptr<agent::AgentClient> client;
};

bool Eventually(const std::function<bool()>& pred) {
  const absl::Time end = absl::Now() + absl::Seconds(20);
  while (!pred()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST(DatagramAgentTest, FaultsFlipAtOnceAndSilenceIsNoticed) {
  GrpcTestEnv env;
  Agent a(env, "lab-b2");
  // Heartbeats come as datagrams (200 ms apart here), and the agent holds no call open.
  ASSERT_TRUE(Eventually([&] { return env.server->datagrams()->counters().accepted >= 3; }));
  EXPECT_EQ(env.server->agents().active_streams(), 0u);
  EXPECT_THAT(a.Log(), HasSubstr("as datagrams to UDP port"));
  // A fault is one ReportEvent call: the GPU flips at once.
  const int64_t seq = env.state->LastSeq();
  a.gpus.Inject({5, agent::GpuEventKind::kXid, 79, "fell off the bus"});
  ASSERT_TRUE(env.WaitFor(seq, "gpu-unhealthy", "lab-b2"));
  EXPECT_TRUE(env.GpuFaulty("lab-b2", 5));
  ASSERT_TRUE(Eventually([&] { return a.client->events_sent() == 1; }));
  // The agent stops (a dead node): after the window the node is lost.
  a.client->Stop();
  env.clock.Advance(env.options.heartbeat_window + absl::Milliseconds(1));
  EXPECT_EQ(env.server->monitor().CheckNow(), 1);
  EXPECT_EQ(env.state->NodeHealthSources("lab-b2"), static_cast<uint8_t>(HealthSource::kAgentLost));
}

TEST(DatagramAgentTest, RefusedDatagramsFallBackToAStream) {
  GrpcTestEnv env;
  env.server->datagrams()->Stop();  // offered, but nothing receives them (as if UDP were blocked)
  Agent a(env, "lab-b3");
  ASSERT_TRUE(Eventually([&] { return a.client->acks() >= 2; }));  // heartbeats acked on a stream
  EXPECT_THAT(a.Log(), HasSubstr("using a ReportHealth stream instead"));
  EXPECT_EQ(env.server->agents().active_streams(), 1u);
  const int64_t seq = env.state->LastSeq();
  a.gpus.Inject({1, agent::GpuEventKind::kEccUncorrectable, 0, ""});
  ASSERT_TRUE(env.WaitFor(seq, "gpu-unhealthy", "lab-b3"));
}

}  // namespace
}  // namespace topogang
