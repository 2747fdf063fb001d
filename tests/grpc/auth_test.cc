// Callers identified the Kubernetes way, over loopback: the real gRPC server asks the fake API
// server (real TokenReview / SubjectAccessReview JSON over HTTP) through the same reviewers
// topogangd's main wires. An agent's projected ServiceAccount token may only report for the node
// it is bound to; unknown, expired, wrong-audience and non-agent tokens are refused; Drain and
// Undrain need RBAC (or an @admin token) and are refused when nothing is configured; a stream
// ends when its token expires; an agent picks up a rotated token file. Time is the FakeClock.
#include <gmock/gmock.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "agent/agent_client.h"
#include "agent/fake_source.h"
#include "tests/grpc/grpc_test_env.h"
#include "tests/support/fake_apiserver.h"
#include "topogang/v1/agent.grpc.pb.h"
#include "topogang/v1/placement.grpc.pb.h"
#include "topogangd/kube_reviewers.h"

namespace topogang {
namespace {

using testing::FakeApiServer;
using testing::GrpcTestEnv;
using ::testing::HasSubstr;
namespace v1 = ::topogang::v1;

constexpr int64_t kNow = 1700000000;  // GrpcTestEnv's FakeClock start
constexpr char kAgentNs[] = "topogang-system";
constexpr char kAgentSa[] = "topogang-agent";
constexpr char kAdmin[] = "admin-token-0123456789abcdef";

class AuthTest : public ::testing::Test {
 protected:
  AuthTest() { api.SetReviewTime(kNow); }

  // The daemon's options: TokenReview for agents, and (optionally) SubjectAccessReview.
  GrpcServerOptions Options(bool access_review, bool admin_token = false) {
    GrpcServerOptions o = GrpcTestEnv::PlaintextOptions();
    o.allow_unauthenticated_agents = false;
    o.allow_unauthenticated_admin = false;
    o.token_review.enabled = true;
    o.token_review.audiences = {"topogang"};
    o.token_review.agent_usernames = {"system:serviceaccount:topogang-system:topogang-agent"};
    o.access_review.enabled = access_review;
    KubeConfig kc;
    kc.server = api.url();
    auto reviews = std::make_shared<KubeReviewClient>(std::make_shared<KubeClient>(kc));
    o.token_reviewer = std::make_shared<KubeTokenReviewer>(reviews);
    o.access_reviewer = std::make_shared<KubeAccessReviewer>(reviews);
    if (admin_token) o.tokens.admin_tokens.insert(kAdmin);
    return o;
  }
  // A projected token of the agent DaemonSet's pod on `node`, valid for an hour: JWT-shaped like
  // the real ones (the daemon reads `exp`; the fake API server knows it by its text).
  std::string AgentToken(const std::string& node, int64_t expires = kNow + 3600) {
    const std::string claims = absl::StrCat(R"({"aud":["topogang"],"exp":)", expires,
                                            R"(,"sub":"system:serviceaccount:topogang-system:)",
                                            R"(topogang-agent","node":")", node, R"("})");
    std::string token = absl::StrCat(absl::WebSafeBase64Escape(R"({"alg":"RS256"})"), ".",
                                     absl::WebSafeBase64Escape(claims), ".c2lnbmF0dXJl");
    api.AddToken(token,
                 FakeApiServer::ServiceAccountToken(kAgentNs, kAgentSa, node, "topogang", expires));
    return token;
  }

  static grpc::Status Register(GrpcTestEnv& env, const std::string& node,
                               const std::string& token) {
    auto stub = v1::AgentService::NewStub(env.Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::RegisterRequest req;
    req.set_node(node);
    for (int i = 0; i < 8; ++i) req.add_gpus()->set_index(i);
    v1::RegisterResponse resp;
    return stub->Register(&ctx, req, &resp);
  }
  static grpc::Status Drain(GrpcTestEnv& env, const std::string& node, const std::string& token,
                            bool undrain = false) {
    auto stub = v1::PlacementService::NewStub(env.Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::DrainRequest d;
    d.set_node(node);
    d.set_reason("bad DIMM");
    v1::NodeHealth h;
    return undrain ? stub->Undrain(&ctx, d, &h) : stub->Drain(&ctx, d, &h);
  }
  // Streams get a deadline too: a test that fails must not hang on a stream left open.
  static void Deadline(grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  }
  static v1::HealthReport Xid(const std::string& node, int gpu) {
    v1::HealthReport r;
    r.set_node(node);
    r.mutable_gpu_event()->set_gpu_index(gpu);
    r.mutable_gpu_event()->set_kind(v1::GpuEvent::XID);
    r.mutable_gpu_event()->set_xid(79);
    return r;
  }

  FakeApiServer api;
};

TEST_F(AuthTest, NodeBoundAgentTokenReportsForItsOwnNodeOnly) {
  GrpcTestEnv env(Options(false));
  const std::string a1 = AgentToken("lab-a1");
  ASSERT_TRUE(Register(env, "lab-a1", a1).ok());
  grpc::Status s = Register(env, "lab-a2", a1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("bound to node 'lab-a1', not 'lab-a2'"));
  EXPECT_FALSE(env.server->agents().Registered("lab-a2"));

  // lab-a2's agent registers with its own token; lab-a1's token still cannot report for it.
  ASSERT_TRUE(Register(env, "lab-a2", AgentToken("lab-a2")).ok());
  auto stub = v1::AgentService::NewStub(env.Channel());
  {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    ctx.AddMetadata("authorization", "Bearer " + a1);
    auto stream = stub->ReportHealth(&ctx);
    stream->Write(Xid("lab-a2", 0));
    v1::HealthAck ack;
    EXPECT_FALSE(stream->Read(&ack));
    s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_FALSE(env.GpuFaulty("lab-a2", 0));
  }
  {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    ctx.AddMetadata("authorization", "Bearer " + a1);
    auto stream = stub->ReportHealth(&ctx);
    ASSERT_TRUE(stream->Write(Xid("lab-a1", 3)));
    v1::HealthAck ack;
    ASSERT_TRUE(stream->Read(&ack));
    EXPECT_TRUE(ack.gpu_unhealthy());
    EXPECT_TRUE(env.GpuFaulty("lab-a1", 3));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
}

TEST_F(AuthTest, RefusesUnknownExpiredWrongAudienceAndNonAgentTokens) {
  GrpcTestEnv env(Options(false));
  grpc::Status s = Register(env, "lab-a1", "never-issued-token-0123456789");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("token lookup failed"));

  s = Register(env, "lab-a1", AgentToken("lab-a1", kNow - 1));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("expired"));

  // A token meant for the API server itself (the default audience) is not one for topogangd.
  api.AddToken("api-audience-token",
               FakeApiServer::ServiceAccountToken(kAgentNs, kAgentSa, "lab-a1",
                                                  "https://kubernetes.default.svc.cluster.local"));
  s = Register(env, "lab-a1", "api-audience-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("audience"));

  // Any other pod on lab-a1 has a token bound to lab-a1 too; it is not the agent.
  api.AddToken("app-token",
               FakeApiServer::ServiceAccountToken("default", "training-job", "lab-a1", "topogang"));
  s = Register(env, "lab-a1", "app-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("not an agent service account"));

  // The agent's ServiceAccount, but a token bound to no node (e.g. `kubectl create token`).
  api.AddToken("unbound-token",
               FakeApiServer::ServiceAccountToken(kAgentNs, kAgentSa, "", "topogang"));
  s = Register(env, "lab-a1", "unbound-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("not bound to a node"));

  EXPECT_EQ(Register(env, "lab-a1", "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(env.server->agents().Registered("lab-a1"));
  EXPECT_TRUE(Register(env, "lab-a1", AgentToken("lab-a1")).ok());  // still serving
}

TEST_F(AuthTest, VerdictsAreCachedForTheTtlOnly) {
  GrpcTestEnv env(Options(false));
  const std::string a1 = AgentToken("lab-a1");
  ASSERT_TRUE(Register(env, "lab-a1", a1).ok());
  ASSERT_TRUE(Register(env, "lab-a1", a1).ok());
  EXPECT_EQ(api.token_reviews(), 1);
  // Revoked (its pod deleted): still accepted from the cache until the TTL passes.
  api.RemoveToken(a1);
  ASSERT_TRUE(Register(env, "lab-a1", a1).ok());
  env.clock.Advance(absl::Seconds(10));
  EXPECT_EQ(Register(env, "lab-a1", a1).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(api.token_reviews(), 2);
}

TEST_F(AuthTest, MissingRbacForTokenReviewIsAClearError) {
  GrpcTestEnv env(Options(false));
  api.ForbidReviews(true);
  grpc::Status s = Register(env, "lab-a1", AgentToken("lab-a1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("cannot create resource \"tokenreviews\""));
  EXPECT_THAT(s.error_message(), HasSubstr("deploy/rbac.yaml"));
  api.ForbidReviews(false);
  EXPECT_TRUE(Register(env, "lab-a1", AgentToken("lab-a1")).ok());  // errors are not cached
}

TEST_F(AuthTest, DrainIsRefusedWhenNoAuthorizationIsConfigured) {
  GrpcServerOptions o = Options(false);
  GrpcTestEnv env(o);
  grpc::Status s = Drain(env, "lab-b1", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("no admin authorization is configured"));
  // A valid agent token is no admin identity either.
  EXPECT_EQ(Drain(env, "lab-b1", AgentToken("lab-b1")).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(env.state->NodeHealthSources("lab-b1"), 0);
  // Read-only calls stay open.
  auto stub = v1::PlacementService::NewStub(env.Channel());
  grpc::ClientContext ctx;
  v1::ListGangsRequest req;
  v1::ListGangsResponse resp;
  EXPECT_TRUE(stub->ListGangs(&ctx, req, &resp).ok());
}

TEST_F(AuthTest, DrainNeedsRbacThroughSubjectAccessReview) {
  GrpcTestEnv env(Options(true, /*admin_token=*/true));
  const std::string oncall = "oncall-token-0123456789";
  api.AddToken(oncall, FakeApiServer::ServiceAccountToken("ops", "oncall", "", "topogang"));
  const std::string user = "system:serviceaccount:ops:oncall";

  grpc::Status s = Drain(env, "lab-b1", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("needs a bearer token"));
  s = Drain(env, "lab-b1", oncall);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("may not drain nodes.topogang.io 'lab-b1'"));
  EXPECT_EQ(env.state->NodeHealthSources("lab-b1"), 0);
  // What was asked: the token's user (with its groups and extra) and the verb on the node.
  ASSERT_EQ(api.access_review_specs().size(), 1u);
  const Json spec = api.access_review_specs()[0];
  EXPECT_EQ(spec["user"], user);
  EXPECT_EQ(spec["resourceAttributes"]["verb"], "drain");
  EXPECT_EQ(spec["resourceAttributes"]["group"], "topogang.io");
  EXPECT_EQ(spec["resourceAttributes"]["resource"], "nodes");
  EXPECT_EQ(spec["resourceAttributes"]["name"], "lab-b1");
  EXPECT_THAT(spec["groups"].get<std::vector<std::string>>(),
              ::testing::Contains("system:serviceaccounts:ops"));

  api.Grant(user, "drain", "topogang.io", "nodes");
  env.clock.Advance(absl::Seconds(10));  // past the cached refusal
  ASSERT_TRUE(Drain(env, "lab-b1", oncall).ok());
  EXPECT_EQ(env.state->NodeHealthSources("lab-b1"),
            static_cast<uint8_t>(HealthSource::kAdminDrain));
  // Undrain is its own verb.
  s = Drain(env, "lab-b1", oncall, /*undrain=*/true);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("undrain"));
  api.Grant("system:serviceaccounts:ops", "undrain", "topogang.io", "nodes");  // by group
  env.clock.Advance(absl::Seconds(10));
  ASSERT_TRUE(Drain(env, "lab-b1", oncall, /*undrain=*/true).ok());
  EXPECT_EQ(env.state->NodeHealthSources("lab-b1"), 0);

  // The @admin token needs no review; an expired user token is refused before any SAR.
  const int asked = api.access_reviews();
  EXPECT_TRUE(Drain(env, "lab-b2", kAdmin).ok());
  api.AddToken("old-token",
               FakeApiServer::ServiceAccountToken("ops", "oncall", "", "topogang", kNow - 5));
  EXPECT_EQ(Drain(env, "lab-b3", "old-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(api.access_reviews(), asked);
}

TEST_F(AuthTest, AStreamEndsWhenItsTokenExpires) {
  GrpcTestEnv env(Options(false));
  const std::string a1 = AgentToken("lab-a1", kNow + 100);
  ASSERT_TRUE(Register(env, "lab-a1", a1).ok());
  auto stub = v1::AgentService::NewStub(env.Channel());
  v1::HealthReport beat;
  beat.set_node("lab-a1");
  beat.mutable_heartbeat()->set_seq(1);
  v1::HealthAck ack;

  // A report after the expiry is refused...
  grpc::ClientContext c1;
  Deadline(&c1);
  c1.AddMetadata("authorization", "Bearer " + a1);
  auto s1 = stub->ReportHealth(&c1);
  ASSERT_TRUE(s1->Write(beat));
  ASSERT_TRUE(s1->Read(&ack));
  // ...and an idle stream is ended by the sweep.
  grpc::ClientContext c2;
  Deadline(&c2);
  c2.AddMetadata("authorization", "Bearer " + a1);
  auto s2 = stub->ReportHealth(&c2);
  ASSERT_TRUE(s2->Write(beat));
  ASSERT_TRUE(s2->Read(&ack));
  EXPECT_EQ(env.server->agents().EndExpiredStreams(env.clock.Now()), 0);

  env.clock.Advance(absl::Seconds(100));
  s1->Write(Xid("lab-a1", 2));
  EXPECT_FALSE(s1->Read(&ack));
  grpc::Status st = s1->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("expired"));
  EXPECT_FALSE(env.GpuFaulty("lab-a1", 2));

  ASSERT_TRUE(api.WaitFor([&] { return env.server->agents().active_streams() == 1; }));
  EXPECT_EQ(env.server->agents().EndExpiredStreams(env.clock.Now()), 1);
  EXPECT_FALSE(s2->Read(&ack));
  EXPECT_EQ(s2->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(AuthTest, AgentReconnectsWithItsRotatedTokenFile) {
  GrpcTestEnv env(Options(false));
  const std::string dir = ::testing::TempDir() + "/topogang-auth-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/token";
  auto write = [&](const std::string& t) {  // as the kubelet does: a new file renamed in place
    std::ofstream(file + ".new") << t << "\n";
    std::filesystem::rename(file + ".new", file);
  };
  const std::string first = AgentToken("lab-a3", kNow + 3600);
  write(first);
  agent::FakeGpuSource gpus(8, "NVIDIA H100 80GB HBM3", "lab-a3");
  agent::AgentOptions o;
  o.server = env.target();
  o.node = "lab-a3";
  o.token_file = file;
  o.token_check_interval = absl::Milliseconds(20);
  o.min_backoff = absl::Milliseconds(20);
  o.max_backoff = absl::Milliseconds(100);
  o.log = [](const std::string&) {};
  agent::AgentClient client(o, gpus);
  client.Start();
  // Reports: acks on a stream, heartbeat datagrams otherwise (the default).
  auto reports = [&] { return client.acks() + client.heartbeats_sent(); };
  ASSERT_TRUE(api.WaitFor([&] { return client.registrations() >= 1 && reports() >= 1; }));
  const int reviews = api.token_reviews();

  const std::string second = AgentToken("lab-a3", kNow + 7200);
  write(second);
  api.RemoveToken(first);  // the old token's pod-bound successor replaced it
  ASSERT_TRUE(api.WaitFor([&] { return client.registrations() >= 2; }));
  EXPECT_GT(api.token_reviews(), reviews);  // the new token was reviewed
  const int64_t sent = reports();
  ASSERT_TRUE(api.WaitFor([&] { return reports() > sent; }));  // and reports flow again
  // An XID after the rotation still reaches the model.
  gpus.Inject({4, agent::GpuEventKind::kXid, 79, "after rotation"});
  ASSERT_TRUE(api.WaitFor([&] { return env.GpuFaulty("lab-a3", 4); }));
  client.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace topogang
