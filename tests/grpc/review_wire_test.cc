// TokenReview / SubjectAccessReview bodies as the API server writes them (the TokenReview is the
// one the Kubernetes documentation shows for a pod-bound token, "Verifying and inspecting private
// claims"), its error Statuses, garbage, the JWT expiry reader, the review cache, and the
// daemon.grpc keys that turn them on.
#include <gmock/gmock.h>

#include "absl/strings/escaping.h"
#include "api/grpc_config.h"
#include "api/jwt_claims.h"
#include "api/review_cache.h"
#include "common/json_util.h"
#include "common/yaml_util.h"
#include "kube/access_review.h"
#include "kube/api_status.h"
#include "kube/token_review.h"

namespace topogang {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kDocReview[] = R"({
  "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
  "metadata": {"creationTimestamp": null}, "spec": {"token": "<token>"},
  "status": {
    "audiences": ["https://kubernetes.default.svc.cluster.local"],
    "authenticated": true,
    "user": {
      "extra": {
        "authentication.kubernetes.io/credential-id": ["JTI=7ee52be0-9045-4653-aa5e-0da57b8dccdc"],
        "authentication.kubernetes.io/node-name": ["kind-control-plane"],
        "authentication.kubernetes.io/node-uid": ["497e9d9a-47aa-4930-b0f6-9f2fb574c8c6"],
        "authentication.kubernetes.io/pod-name": ["test-pod"],
        "authentication.kubernetes.io/pod-uid": ["e87dbbd6-3d7e-45db-aafb-72b24627dff5"]},
      "groups": ["system:serviceaccounts", "system:serviceaccounts:default",
                 "system:authenticated"],
      "uid": "f8b4161b-2e2b-11e9-86b7-2afc33b31a7e",
      "username": "system:serviceaccount:default:my-sa"}}})";

TEST(TokenReviewWireTest, ReadsTheDocumentedAnswer) {
  auto r = ParseTokenReviewResponse(201, kDocReview);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->authenticated);
  EXPECT_EQ(r->username, "system:serviceaccount:default:my-sa");
  EXPECT_EQ(r->uid, "f8b4161b-2e2b-11e9-86b7-2afc33b31a7e");
  EXPECT_THAT(r->groups, ElementsAre("system:serviceaccounts", "system:serviceaccounts:default",
                                     "system:authenticated"));
  EXPECT_THAT(r->extra.at("authentication.kubernetes.io/node-name"),
              ElementsAre("kind-control-plane"));
  EXPECT_THAT(r->audiences, ElementsAre("https://kubernetes.default.svc.cluster.local"));
}

TEST(TokenReviewWireTest, RefusedTokensAndErrors) {
  auto r = ParseTokenReviewResponse(
      200, R"({"kind":"TokenReview","status":{"user":{},"error":"[invalid bearer token]"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->authenticated);
  EXPECT_EQ(r->error, "[invalid bearer token]");
  EXPECT_FALSE(ParseTokenReviewResponse(201, R"({"kind":"TokenReview"})")->authenticated);

  absl::Status s =
      ParseTokenReviewResponse(403, R"({"kind":"Status","status":"Failure","reason":"Forbidden",
      "message":"tokenreviews.authentication.k8s.io is forbidden: User \"x\" cannot create"})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("HTTP 403: tokenreviews.authentication.k8s.io is forbidden"));
  EXPECT_THAT(s.message(), HasSubstr("deploy/rbac.yaml"));
  EXPECT_EQ(ParseTokenReviewResponse(503, "upstream\x01 gone").status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ParseTokenReviewResponse(400, "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  for (const char* garbage :
       {"", "[]", "{", R"({"kind":"Pod"})", R"({"kind":"TokenReview","status":[]})",
        R"({"kind":"TokenReview","status":{"authenticated":"yes"}})",
        R"({"kind":"TokenReview","status":{"user":{"groups":"g"}}})",
        R"({"kind":"TokenReview","status":{"user":{"extra":{"k":"v"}}}})",
        R"({"kind":"TokenReview","status":{"audiences":[1]}})"}) {
    EXPECT_EQ(ParseTokenReviewResponse(201, garbage).status().code(),
              absl::StatusCode::kFailedPrecondition)
        << garbage;
  }
}

TEST(TokenReviewWireTest, RequestShape) {
  Json j = Json::parse(MakeTokenReview("tok\"en", {"topogang"}));
  EXPECT_EQ(j["apiVersion"], "authentication.k8s.io/v1");
  EXPECT_EQ(j["kind"], "TokenReview");
  EXPECT_EQ(j["spec"]["token"], "tok\"en");
  EXPECT_EQ(j["spec"]["audiences"], Json::array({"topogang"}));
  EXPECT_FALSE(Json::parse(MakeTokenReview("t", {}))["spec"].contains("audiences"));
}

TEST(AccessReviewWireTest, RequestAndAnswers) {
  SubjectAccessReviewSpec spec;
  spec.user = "alice";
  spec.groups = {"ops"};
  spec.extra = {{"authentication.kubernetes.io/pod-name", {"p"}}};
  spec.verb = "drain";
  spec.group = "topogang.io";
  spec.resource = "nodes";
  spec.name = "lab-b1";
  Json j = Json::parse(MakeSubjectAccessReview(spec));
  EXPECT_EQ(j["apiVersion"], "authorization.k8s.io/v1");
  EXPECT_EQ(j["kind"], "SubjectAccessReview");
  EXPECT_EQ(j["spec"]["user"], "alice");
  EXPECT_EQ(j["spec"]["resourceAttributes"], Json({{"verb", "drain"},
                                                   {"group", "topogang.io"},
                                                   {"resource", "nodes"},
                                                   {"name", "lab-b1"}}));
  EXPECT_FALSE(j["spec"]["resourceAttributes"].contains("namespace"));

  auto r = ParseSubjectAccessReviewResponse(
      201, R"({"kind":"SubjectAccessReview","status":{"allowed":true,
      "reason":"RBAC: allowed by ClusterRoleBinding \"x\" of ClusterRole \"y\" to User \"alice\""}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->allowed);
  EXPECT_THAT(r->reason, HasSubstr("RBAC"));
  r = ParseSubjectAccessReviewResponse(201, R"({"kind":"SubjectAccessReview","status":{}})");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->allowed);
  // Contradictory: never allowed.
  r = ParseSubjectAccessReviewResponse(
      200, R"({"kind":"SubjectAccessReview","status":{"allowed":true,"denied":true}})");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->allowed);
  EXPECT_EQ(ParseSubjectAccessReviewResponse(422, R"({"kind":"Status","message":"invalid"})")
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ParseSubjectAccessReviewResponse(401, "").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ParseSubjectAccessReviewResponse(
                201, R"({"kind":"SubjectAccessReview","status":{"allowed":1}})")
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(JwtClaimsTest, ReadsExpOnlyFromWellFormedTokens) {
  auto jwt = [](const std::string& payload) {
    return absl::WebSafeBase64Escape("{\"alg\":\"RS256\"}") + "." +
           absl::WebSafeBase64Escape(payload) + ".sig";
  };
  EXPECT_EQ(JwtExpiry(jwt(R"({"exp":1700003600,"aud":["topogang"]})")),
            absl::FromUnixSeconds(1700003600));
  EXPECT_EQ(JwtExpiry(jwt(R"({"exp":1700003600.7})")), absl::FromUnixSeconds(1700003600));
  for (const std::string& bad :
       {std::string("not-a-jwt"), jwt(R"({"EXP":1})"), jwt(R"({"exp":"1"})"), jwt("[1]"),
        jwt(R"({"exp":-5})"), jwt(R"({"exp":1e300})"), std::string("a.!!!.c"), std::string(".."),
        jwt("{")}) {
    EXPECT_FALSE(JwtExpiry(bad).has_value()) << bad;
  }
}

TEST(ReviewCacheTest, KeysAndTtls) {
  EXPECT_NE(ReviewCacheKey({"ab", "c"}), ReviewCacheKey({"a", "bc"}));
  EXPECT_EQ(ReviewCacheKey({"x"}).size(), 64u);
  FakeClock clock(absl::FromUnixSeconds(100));
  VerdictCache<int> cache(clock, {absl::Seconds(10), absl::Seconds(2), 2});
  int v = 0;
  cache.Put("a", 1, true);
  cache.Put("b", 2, false);
  EXPECT_TRUE(cache.Get("a", &v));
  EXPECT_EQ(v, 1);
  clock.Advance(absl::Seconds(2));
  EXPECT_FALSE(cache.Get("b", &v));  // refusals expire sooner
  EXPECT_TRUE(cache.Get("a", &v));
  cache.Put("c", 3, true);
  cache.Put("d", 4, true);  // full: what is not expired goes too
  EXPECT_LE(cache.size(), 2u);
  EXPECT_TRUE(cache.Get("d", &v));
}

absl::StatusOr<GrpcServerOptions> ParseGrpc(const std::string& text) {
  auto root = YamlParse(text, "cfg.yaml");
  if (!root.ok()) return root.status();
  return ParseGrpcConfig((*root)["grpc"], "cfg.yaml");
}

TEST(GrpcAuthConfigTest, TokenAndAccessReview) {
  auto o = ParseGrpc(R"(grpc:
  allow_unauthenticated_admin: true
  token_review:
    audiences: [topogang, other]
    agent_service_accounts: [topogang-system/topogang-agent, "system:serviceaccount:x:y"]
    cache_ttl_seconds: 30
    negative_cache_ttl_seconds: 3
    timeout_ms: 2000
    workers: 2
  access_review: {cache_ttl_seconds: 5}
)");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->allow_unauthenticated_admin);
  EXPECT_TRUE(o->token_review.enabled);
  EXPECT_THAT(o->token_review.audiences, ElementsAre("topogang", "other"));
  EXPECT_THAT(o->token_review.agent_usernames,
              ElementsAre("system:serviceaccount:topogang-system:topogang-agent",
                          "system:serviceaccount:x:y"));
  EXPECT_EQ(o->token_review.cache_ttl, absl::Seconds(30));
  EXPECT_EQ(o->token_review.negative_cache_ttl, absl::Seconds(3));
  EXPECT_EQ(o->token_review.timeout, absl::Milliseconds(2000));
  EXPECT_EQ(o->token_review.workers, 2);
  EXPECT_TRUE(o->access_review.enabled);
  EXPECT_EQ(o->access_review.cache_ttl, absl::Seconds(5));

  auto d = ParseGrpc("grpc:\n  token_review: {agent_service_accounts: [ns/sa]}\n");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(d->token_review.audiences, ElementsAre("topogang"));
  EXPECT_FALSE(d->access_review.enabled);
  EXPECT_FALSE(ParseGrpc("grpc: {}\n")->token_review.enabled);

  EXPECT_THAT(ParseGrpc("grpc:\n  token_review: {}\n").status().message(),
              HasSubstr("agent_service_accounts"));
  EXPECT_THAT(
      ParseGrpc("grpc:\n  token_review: {agent_service_accounts: [Bad/x]}\n").status().message(),
      HasSubstr("DNS"));
  EXPECT_FALSE(ParseGrpc("grpc:\n  token_review: {agent_service_accounts: [a:b]}\n").ok());
  EXPECT_THAT(ParseGrpc("grpc:\n  access_review: {}\n").status().message(),
              HasSubstr("needs token_review"));
  EXPECT_THAT(ParseGrpc("grpc:\n  token_review: {agent_service_accounts: [a/b], colour: red}\n")
                  .status()
                  .message(),
              HasSubstr("cfg.yaml:2"));
  EXPECT_TRUE(ParseGrpc("grpc:\n  access_review: {enabled: false}\n").ok());
}

TEST(ApiStatusTest, CodesByHttpStatus) {
  EXPECT_EQ(ApiCallError("X", 401, "").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ApiCallError("X", 404, "").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ApiCallError("X", 429, "").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ApiCallError("X", 500, R"({"message":"etcd"})").message(), "X: HTTP 500: etcd");
  EXPECT_EQ(ApiCallError("X", 502, std::string(1000, 'a')).message().size(),
            std::string("X: HTTP 502: ").size() + 300);
}

}  // namespace
}  // namespace topogang
