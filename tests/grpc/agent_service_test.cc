// AgentService over a real loopback server: registration checks, GPU events flipping the health
// bits in the DaemonState, bad reports rejected with clear codes, and the heartbeat monitor
// driven by the FakeClock.
#include <gmock/gmock.h>

#include "api/identity.h"
#include "scheduler/gpu_health_policy.h"
#include "tests/grpc/grpc_test_env.h"
#include "topogang/v1/agent.grpc.pb.h"

namespace topogang {
namespace {

using testing::GrpcTestEnv;
using ::testing::HasSubstr;
namespace v1 = ::topogang::v1;

v1::RegisterRequest Reg(const std::string& node, int gpus) {
  v1::RegisterRequest r;
  r.set_node(node);
  r.set_driver_version("fake");
  for (int i = 0; i < gpus; ++i) {
    v1::Gpu* g = r.add_gpus();
    g->set_index(i);
    g->set_uuid("GPU-" + node + "-" + std::to_string(i));
    g->set_model("NVIDIA H100 80GB HBM3");
  }
  return r;
}

v1::HealthReport Event(const std::string& node, int gpu, v1::GpuEvent::Kind kind,
                       uint32_t xid = 0) {
  v1::HealthReport r;
  r.set_node(node);
  r.mutable_gpu_event()->set_gpu_index(gpu);
  r.mutable_gpu_event()->set_kind(kind);
  r.mutable_gpu_event()->set_xid(xid);
  return r;
}

v1::HealthReport Beat(const std::string& node, uint64_t seq) {
  v1::HealthReport r;
  r.set_node(node);
  r.mutable_heartbeat()->set_seq(seq);
  return r;
}

class AgentServiceTest : public ::testing::Test {
 protected:
  GrpcTestEnv env;
  std::unique_ptr<v1::AgentService::Stub> stub = v1::AgentService::NewStub(env.Channel());

  grpc::Status Register(const v1::RegisterRequest& r, v1::RegisterResponse* resp = nullptr) {
    grpc::ClientContext ctx;
    v1::RegisterResponse local;
    return stub->Register(&ctx, r, resp ? resp : &local);
  }
  // Sends one report on a fresh stream, returns the ack or the stream's error.
  grpc::Status SendOne(const v1::HealthReport& rep, v1::HealthAck* ack) {
    grpc::ClientContext ctx;
    auto s = stub->ReportHealth(&ctx);
    s->Write(rep);
    if (s->Read(ack)) {
      s->WritesDone();
      return s->Finish();
    }
    return s->Finish();
  }
};

TEST_F(AgentServiceTest, RegisterValidatesNodeAndIndices) {
  grpc::Status s = Register(Reg("ghost", 8));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("ghost"));

  v1::RegisterRequest r = Reg("lab-a1", 8);
  r.mutable_gpus(7)->set_index(8);
  s = Register(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(s.error_message(), HasSubstr("GPU index 8"));

  r.mutable_gpus(7)->set_index(-1);
  EXPECT_EQ(Register(r).error_code(), grpc::StatusCode::OUT_OF_RANGE);

  r.mutable_gpus(7)->set_index(3);
  s = Register(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("twice"));

  EXPECT_EQ(Register(Reg("", 8)).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(env.server->agents().Registered("lab-a1"));
  // Nothing above changed the model.
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(env.GpuFaulty("lab-a1", i));

  v1::RegisterResponse resp;
  ASSERT_TRUE(Register(Reg("lab-a1", 8), &resp).ok());
  EXPECT_EQ(resp.heartbeat_interval_ms(), 200);
  EXPECT_EQ(resp.model_gpus(), 8);
  EXPECT_TRUE(resp.warnings().empty());
}

TEST_F(AgentServiceTest, MissingGpusAreMarkedLostUntilReportedAgain) {
  v1::RegisterResponse resp;
  ASSERT_TRUE(Register(Reg("lab-a2", 7), &resp).ok());
  EXPECT_TRUE(env.GpuFaulty("lab-a2", 7));
  EXPECT_FALSE(env.GpuFaulty("lab-a2", 6));
  EXPECT_THAT(resp.warnings(), ::testing::Contains(HasSubstr("reports 7 GPUs")));
  ASSERT_TRUE(Register(Reg("lab-a2", 8)).ok());
  EXPECT_FALSE(env.GpuFaulty("lab-a2", 7));
}

TEST_F(AgentServiceTest, FatalXidMarksGpuUnhealthyAndRecoveryRestoresIt) {
  ASSERT_TRUE(Register(Reg("lab-a1", 8)).ok());
  grpc::ClientContext ctx;
  auto stream = stub->ReportHealth(&ctx);
  v1::HealthAck ack;
  ASSERT_TRUE(stream->Write(Beat("lab-a1", 1)));
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(ack.seq(), 1u);
  EXPECT_EQ(ack.heartbeat_interval_ms(), 200);

  ASSERT_TRUE(stream->Write(Event("lab-a1", 3, v1::GpuEvent::XID, 79)));
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_TRUE(ack.gpu_unhealthy());
  EXPECT_THAT(ack.action(), HasSubstr("fallen off the bus"));
  EXPECT_TRUE(env.GpuFaulty("lab-a1", 3));

  ASSERT_TRUE(stream->Write(Event("lab-a1", 2, v1::GpuEvent::XID, 63)));  // row-remap event
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_FALSE(ack.gpu_unhealthy());
  EXPECT_THAT(ack.action(), HasSubstr("recorded"));
  EXPECT_FALSE(env.GpuFaulty("lab-a1", 2));

  ASSERT_TRUE(stream->Write(Event("lab-a1", 5, v1::GpuEvent::ECC_UNCORRECTABLE)));
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_TRUE(env.GpuFaulty("lab-a1", 5));

  ASSERT_TRUE(stream->Write(Event("lab-a1", 3, v1::GpuEvent::RECOVERED)));
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_FALSE(env.GpuFaulty("lab-a1", 3));
  EXPECT_TRUE(env.GpuFaulty("lab-a1", 5));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  // A re-register does not silently clear an event-made fault.
  ASSERT_TRUE(Register(Reg("lab-a1", 8)).ok());
  EXPECT_TRUE(env.GpuFaulty("lab-a1", 5));
}

// Slowness signals change no health bit: they add to the node's slowness score, and the report
// that takes it over the threshold publishes one node-slow event (large gangs then avoid it).
TEST_F(AgentServiceTest, SlownessSignalsScoreTheNodeWithoutTouchingHealth) {
  ASSERT_TRUE(Register(Reg("lab-a1", 8)).ok());
  grpc::ClientContext ctx;
  auto stream = stub->ReportHealth(&ctx);
  v1::HealthAck ack;
  const int64_t seq = env.state->LastSeq();
  ASSERT_TRUE(stream->Write(Event("lab-a1", 2, v1::GpuEvent::ECC_CORRECTABLE_BURST)));
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_FALSE(ack.gpu_unhealthy());
  EXPECT_THAT(ack.action(), HasSubstr("correctable ECC"));
  EXPECT_FALSE(env.GpuFaulty("lab-a1", 2));
  EXPECT_DOUBLE_EQ(env.state->slow_nodes().Score("lab-a1", env.clock.Now()), 0.5);
  EXPECT_TRUE(env.state->slow_nodes().Slow(env.clock.Now()).empty());
  ASSERT_TRUE(stream->Write(Event("lab-a1", 5, v1::GpuEvent::LINK_REPLAY)));
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(env.state->slow_nodes().Slow(env.clock.Now()), std::vector<std::string>{"lab-a1"});
  ASSERT_TRUE(stream->Write(Event("lab-a1", 5, v1::GpuEvent::CLOCK_THROTTLE)));
  ASSERT_TRUE(stream->Read(&ack));
  int slow_events = 0;
  for (const DecisionEvent& e : env.state->WaitEvents(seq, absl::Now(), 1000)) {
    if (e.kind == "node-slow") {
      ++slow_events;
      EXPECT_EQ(e.node, "lab-a1");
      EXPECT_THAT(e.detail, HasSubstr("link-replay"));
    }
  }
  EXPECT_EQ(slow_events, 1) << "one event when the node becomes slow, not one per report";
  EXPECT_FALSE(env.GpuFaulty("lab-a1", 5));
  // The score halves every half-life (30 min): two hours later the node is fine again.
  env.clock.Advance(absl::Hours(2));
  EXPECT_TRUE(env.state->slow_nodes().Slow(env.clock.Now()).empty());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(AgentServiceTest, BadReportsEndTheStreamWithClearCodes) {
  v1::HealthAck ack;
  grpc::Status s = SendOne(Beat("lab-b1", 1), &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("Register"));

  ASSERT_TRUE(Register(Reg("lab-b1", 8)).ok());
  v1::HealthReport empty;
  empty.set_node("lab-b1");
  EXPECT_EQ(SendOne(empty, &ack).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  s = SendOne(Event("lab-b1", 99, v1::GpuEvent::XID, 79), &ack);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(s.error_message(), HasSubstr("99"));
  EXPECT_EQ(SendOne(Event("lab-b1", 99, v1::GpuEvent::XID, 13), &ack).error_code(),
            grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(SendOne(Event("lab-b1", 0, static_cast<v1::GpuEvent::Kind>(42)), &ack).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(SendOne(Event("lab-b1", 0, v1::GpuEvent::KIND_UNSPECIFIED), &ack).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // Switching nodes mid-stream is refused.
  grpc::ClientContext ctx;
  auto stream = stub->ReportHealth(&ctx);
  ASSERT_TRUE(stream->Write(Beat("lab-b1", 1)));
  ASSERT_TRUE(stream->Read(&ack));
  stream->Write(Beat("lab-b2", 2));
  EXPECT_FALSE(stream->Read(&ack));
  s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("lab-b2"));
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(env.GpuFaulty("lab-b1", i));
  // Still serving.
  EXPECT_TRUE(SendOne(Beat("lab-b1", 3), &ack).ok());
}

TEST_F(AgentServiceTest, HeartbeatLossMarksNodeAndReturnClearsIt) {
  ASSERT_TRUE(Register(Reg("lab-a4", 8)).ok());
  HeartbeatMonitor& mon = env.server->monitor();
  env.clock.Advance(absl::Seconds(4));
  EXPECT_EQ(mon.CheckNow(), 0);
  v1::HealthAck ack;
  ASSERT_TRUE(SendOne(Beat("lab-a4", 1), &ack).ok());
  env.clock.Advance(absl::Seconds(5));
  EXPECT_EQ(mon.CheckNow(), 0);  // exactly the window: not yet
  env.clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(mon.CheckNow(), 1);
  EXPECT_EQ(mon.CheckNow(), 0);  // marked once
  EXPECT_EQ(env.state->NodeHealthSources("lab-a4"), static_cast<uint8_t>(HealthSource::kAgentLost));
  EXPECT_THAT(env.state->NodeHealthReason("lab-a4"), HasSubstr("no agent heartbeat"));
  // Nodes whose agent never registered are not watched.
  EXPECT_EQ(env.state->NodeHealthSources("lab-a3"), 0);
  ASSERT_TRUE(SendOne(Beat("lab-a4", 2), &ack).ok());
  EXPECT_EQ(env.state->NodeHealthSources("lab-a4"), 0);
}

TEST(HealthPolicyTest, FatalXidsAndEvents) {
  const auto fatal = DefaultFatalXids();
  for (uint32_t x : {48u, 74u, 79u, 94u, 95u, 119u, 120u}) {
    EXPECT_EQ(DecideGpuEvent(GpuEventKind::kXid, x, fatal).verdict, GpuVerdict::kFatal) << x;
  }
  for (uint32_t x : {13u, 31u, 43u, 63u, 92u}) {
    EXPECT_EQ(DecideGpuEvent(GpuEventKind::kXid, x, fatal).verdict, GpuVerdict::kRecord) << x;
  }
  EXPECT_THAT(DecideGpuEvent(GpuEventKind::kXid, 79, fatal).reason, HasSubstr("XID 79"));
  EXPECT_EQ(DecideGpuEvent(GpuEventKind::kEccUncorrectable, 0, fatal).verdict, GpuVerdict::kFatal);
  EXPECT_EQ(DecideGpuEvent(GpuEventKind::kGpuLost, 0, fatal).verdict, GpuVerdict::kFatal);
  EXPECT_EQ(DecideGpuEvent(GpuEventKind::kThermal, 0, fatal).verdict, GpuVerdict::kRecord);
  EXPECT_EQ(DecideGpuEvent(GpuEventKind::kRecovered, 0, fatal).verdict, GpuVerdict::kRecover);
  // A configured set replaces the default.
  EXPECT_EQ(DecideGpuEvent(GpuEventKind::kXid, 13, {13}).verdict, GpuVerdict::kFatal);
  EXPECT_EQ(DecideGpuEvent(GpuEventKind::kXid, 79, {13}).verdict, GpuVerdict::kRecord);
}

TEST(TokenFileTest, ParsesNodesAndAdminsAndRejectsJunk) {
  auto t = ParseTokenFile("# tokens\n0123456789abcdef lab-a1\n\nfedcba9876543210abc @admin\n", "t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->node_by_token.at("0123456789abcdef"), "lab-a1");
  EXPECT_EQ(t->admin_tokens.count("fedcba9876543210abc"), 1u);
  EXPECT_THAT(ParseTokenFile("short lab-a1\n", "t").status().message(), HasSubstr("t:1"));
  EXPECT_FALSE(ParseTokenFile("0123456789abcdef\n", "t").ok());
  EXPECT_FALSE(ParseTokenFile("0123456789abcdef a\n0123456789abcdef b\n", "t").ok());
}

}  // namespace
}  // namespace topogang
