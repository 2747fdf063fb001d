// TLS, mutual TLS and tokens over loopback: an agent may only speak for its own node. The PKI is
// made fresh per run by testdata/make_test_pki.sh (openssl CLI).
#include <gmock/gmock.h>

#include <cstdlib>
#include <filesystem>

#include "agent/agent_client.h"
#include "tests/grpc/grpc_test_env.h"
#include "topogang/v1/agent.grpc.pb.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace topogang {
namespace {

using testing::GrpcTestEnv;
using ::testing::HasSubstr;
namespace v1 = ::topogang::v1;

constexpr char kTokenA1[] = "token-for-lab-a1-0123456789";
constexpr char kAdmin[] = "admin-token-0123456789abcdef";

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/topogang-pki-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    pki_ = tmpl;
    std::string cmd =
        "sh " + testing::SourceDir() + "/tests/grpc/testdata/make_test_pki.sh " + pki_;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(pki_); }
  static std::string P(const std::string& f) { return pki_ + "/" + f; }

  static GrpcServerOptions Options(bool mtls) {
    GrpcServerOptions o = GrpcTestEnv::PlaintextOptions();
    o.allow_unauthenticated_agents = false;
    o.allow_unauthenticated_admin = false;
    o.tls.cert_file = P("server.crt");
    o.tls.key_file = P("server.key");
    if (mtls) o.tls.client_ca_file = P("ca.crt");
    o.tokens.node_by_token[kTokenA1] = "lab-a1";
    o.tokens.admin_tokens.insert(kAdmin);
    return o;
  }

  // A channel as the agent makes it; cert = "" for none.
  static std::shared_ptr<grpc::Channel> Channel(const GrpcTestEnv& env, const std::string& cert,
                                                const std::string& ca = "ca.crt") {
    agent::AgentOptions o;
    o.server = env.target();
    o.ca_file = P(ca);
    if (!cert.empty()) {
      o.cert_file = P(cert + ".crt");
      o.key_file = P(cert + ".key");
    }
    auto ch = agent::MakeAgentChannel(o);
    EXPECT_TRUE(ch.ok()) << ch.status();
    return *ch;
  }

  static grpc::Status Register(const std::shared_ptr<grpc::Channel>& ch, const std::string& node,
                               const std::string& token = "") {
    auto stub = v1::AgentService::NewStub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::RegisterRequest req;
    req.set_node(node);
    for (int i = 0; i < 8; ++i) req.add_gpus()->set_index(i);
    v1::RegisterResponse resp;
    return stub->Register(&ctx, req, &resp);
  }

  static std::string pki_;
};
std::string SecurityTest::pki_;

TEST_F(SecurityTest, MutualTlsAgentMaySpeakOnlyForItsOwnNode) {
  GrpcTestEnv env(Options(true));
  auto ch = Channel(env, "lab-a1");
  EXPECT_TRUE(Register(ch, "lab-a1").ok());
  grpc::Status s = Register(ch, "lab-a2");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("lab-a1"));
  EXPECT_FALSE(env.server->agents().Registered("lab-a2"));

  // The health stream is held to the same rule.
  auto stub = v1::AgentService::NewStub(ch);
  grpc::ClientContext ctx;
  auto stream = stub->ReportHealth(&ctx);
  v1::HealthReport rep;
  rep.set_node("lab-a2");
  rep.mutable_gpu_event()->set_gpu_index(0);
  rep.mutable_gpu_event()->set_kind(v1::GpuEvent::GPU_LOST);
  stream->Write(rep);
  v1::HealthAck ack;
  EXPECT_FALSE(stream->Read(&ack));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(env.GpuFaulty("lab-a2", 0));
}

TEST_F(SecurityTest, MutualTlsRefusesMissingOrForeignClientCertificates) {
  GrpcTestEnv env(Options(true));
  EXPECT_EQ(Register(Channel(env, ""), "lab-a1").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Register(Channel(env, "rogue-lab-a1"), "lab-a1").error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // A client that does not trust the daemon's CA refuses the daemon.
  EXPECT_EQ(Register(Channel(env, "lab-a1", "rogue-ca.crt"), "lab-a1").error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(env.server->agents().Registered("lab-a1"));
  EXPECT_TRUE(Register(Channel(env, "lab-a1"), "lab-a1").ok());  // still serving
}

TEST_F(SecurityTest, TokensOverTlsIdentifyTheNode) {
  GrpcTestEnv env(Options(false));
  auto ch = Channel(env, "");
  EXPECT_TRUE(Register(ch, "lab-a1", kTokenA1).ok());
  grpc::Status s = Register(ch, "lab-a2", kTokenA1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("belongs to node 'lab-a1'"));
  EXPECT_EQ(Register(ch, "lab-a1").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Register(ch, "lab-a1", "not-a-known-token-xxxx").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(SecurityTest, AdminTokenGuardsDrain) {
  GrpcTestEnv env(Options(false));
  auto stub = v1::PlacementService::NewStub(Channel(env, ""));
  v1::DrainRequest d;
  d.set_node("lab-b1");
  d.set_reason("maintenance");
  v1::NodeHealth h;
  for (auto [token, code] :
       {std::pair<const char*, grpc::StatusCode>{"", grpc::StatusCode::UNAUTHENTICATED},
        {kTokenA1, grpc::StatusCode::PERMISSION_DENIED},
        {kAdmin, grpc::StatusCode::OK}}) {
    grpc::ClientContext ctx;
    if (*token) ctx.AddMetadata("authorization", std::string("Bearer ") + token);
    EXPECT_EQ(stub->Drain(&ctx, d, &h).error_code(), code) << token;
  }
  EXPECT_EQ(env.state->NodeHealthSources("lab-b1"),
            static_cast<uint8_t>(HealthSource::kAdminDrain));
}

TEST_F(SecurityTest, PlaintextRefusesAnonymousAgentsUnlessAllowed) {
  GrpcServerOptions o = GrpcTestEnv::PlaintextOptions();
  o.allow_unauthenticated_agents = false;
  GrpcTestEnv env(o);
  EXPECT_EQ(Register(env.Channel(), "lab-a1").error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(SecurityTest, BadTlsOptionsAreRefusedAtStart) {
  SystemClock clock;
  DaemonState state(testing::LabScheduler(), clock);
  GrpcServerOptions o;
  o.tls.cert_file = P("server.crt");
  EXPECT_EQ(StartGrpcServer(state, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.tls.client_ca_file = P("ca.crt");
  EXPECT_EQ(StartGrpcServer(state, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.tls.cert_file = P("missing.crt");
  o.tls.key_file = P("server.key");
  EXPECT_FALSE(StartGrpcServer(state, o).ok());
  o = {};
  o.token_file = P("no-such-token-file");
  EXPECT_FALSE(StartGrpcServer(state, o).ok());
}

}  // namespace
}  // namespace topogang
