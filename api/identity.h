// Who is calling, and may they. An agent may only speak for its own node: the node must be named
// by its verified client certificate (CN or a SAN DNS name, mutual TLS), by a static bearer token
// mapped to it in a token file, or by the node binding of its projected ServiceAccount token as
// the API server's TokenReview reports it (authentication.kubernetes.io/node-name). Drain and
// Undrain need an admin identity: an "@admin" token from the token file, or a user that the API
// server's SubjectAccessReview allows the verb on nodes.topogang.io; with neither configured they
// are refused. Thread-safe (const after construction; the reviewers are thread-safe).
#pragma once

#include <grpcpp/server_context.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/review_workers.h"
#include "api/reviewers.h"

namespace topogang {

struct TokenFile {
  std::map<std::string, std::string> node_by_token;  // agent tokens
  std::set<std::string> admin_tokens;
};

// Lines "TOKEN NODE" or "TOKEN @admin"; '#' comments and blank lines ignored. Tokens must be at
// least 16 characters; a token listed twice is an error.
absl::StatusOr<TokenFile> ParseTokenFile(absl::string_view text, absl::string_view source);
absl::StatusOr<TokenFile> LoadTokenFile(const std::string& path);

// The resource attributes of the admin verbs, for SubjectAccessReview and RBAC rules:
//   apiGroups: ["topogang.io"], resources: ["nodes"], verbs: ["drain", "undrain"]
// (no such API exists; RBAC checks verbs and resources as plain strings, as it does for
// kube-apiserver's own virtual verbs such as "impersonate" and "escalate").
inline constexpr char kAdminApiGroup[] = "topogang.io";
inline constexpr char kAdminResource[] = "nodes";
inline constexpr char kDrainVerb[] = "drain";
inline constexpr char kUndrainVerb[] = "undrain";

// The user.Info extra key the service-account authenticator sets from a pod-bound token's node
// (k8s.io/apiserver pkg/authentication/serviceaccount/util.go, NodeNameKey). Present from
// Kubernetes 1.30 on (feature ServiceAccountTokenPodNodeInfo, beta and on by default in 1.30):
// the pod's spec.nodeName when the kubelet requested the token. The API server checks that the
// bound pod still exists with that UID, and a bound pod never moves, so it names the agent's node.
inline constexpr char kNodeNameExtra[] = "authentication.kubernetes.io/node-name";

struct AuthenticatorOptions {
  TokenFile tokens;
  // Accept agents with no credentials at all (plaintext demos and tests only).
  bool allow_unauthenticated_agents = false;
  // Accept Drain/Undrain from anyone (demos and tests only).
  bool allow_unauthenticated_admin = false;
  // TokenReview for bearer tokens not in the token file; null = only the file and certificates.
  std::shared_ptr<TokenReviewer> token_reviewer;
  // spec.audiences of every TokenReview; the token must be valid for one of them.
  std::vector<std::string> audiences;
  // Usernames ("system:serviceaccount:NS:NAME") whose node-bound tokens identify agents. Any
  // other pod on a node has a node-bound token too: it must not be able to report GPU faults.
  std::set<std::string> agent_usernames;
  // SubjectAccessReview for Drain/Undrain (needs token_reviewer); null = @admin tokens only.
  std::shared_ptr<AccessReviewer> access_reviewer;
};

// The outcome of authenticating an agent.
struct AgentGrant {
  grpc::Status status;
  // When a stream opened with this identity must end (the token's expiry; certificates and
  // static tokens: never). The agent reconnects with its rotated token.
  absl::Time expires = absl::InfiniteFuture();
};

class Authenticator {
 public:
  // `workers` runs TokenReviews for AuthorizeAgentAsync; may be null when there is no reviewer.
  Authenticator(AuthenticatorOptions options, ReviewWorkers* workers)
      : o_(std::move(options)), workers_(workers) {}

  // OK when the caller may speak for `node`; PERMISSION_DENIED when its identity names another
  // node (or is not an agent), UNAUTHENTICATED when it presents none, an unknown token, or one
  // TokenReview refuses; UNAVAILABLE when TokenReview could not be asked. May block on a
  // TokenReview round trip.
  AgentGrant AuthorizeAgent(const grpc::ServerContextBase& ctx, absl::string_view node) const;
  // The same, for gRPC callback handlers: `done` runs exactly once, inline when no round trip is
  // needed (certificates, the token file, a cached review), else on a review worker.
  void AuthorizeAgentAsync(const grpc::ServerContextBase& ctx, const std::string& node,
                           std::function<void(AgentGrant)> done) const;
  // Drain/Undrain of `node` (`verb` kDrainVerb or kUndrainVerb). OK for an @admin token, or a
  // TokenReview-authenticated user the SubjectAccessReview allows; otherwise UNAUTHENTICATED (no
  // or unknown credentials), PERMISSION_DENIED (not allowed, or no authorization configured:
  // the message says what to configure), UNAVAILABLE (a review could not be asked). Blocking.
  grpc::Status AuthorizeAdmin(const grpc::ServerContextBase& ctx, absl::string_view verb,
                              absl::string_view node) const;

  bool reviews_tokens() const { return o_.token_reviewer != nullptr; }

  // Identities in the verified client certificate (CN and SAN entries).
  static std::vector<std::string> CertIdentities(const grpc::ServerContextBase& ctx);
  // The bearer token in the metadata, "" when none.
  static std::string BearerToken(const grpc::ServerContextBase& ctx);

 private:
  // The decision when it needs no TokenReview; nullopt when it does.
  std::optional<AgentGrant> AgentWithoutReview(const grpc::ServerContextBase& ctx,
                                               absl::string_view node,
                                               const std::string& token) const;
  AgentGrant ReviewAgentToken(const std::string& token, absl::string_view node) const;
  // The TokenReview verdict for `token`, or the status to answer with.
  absl::StatusOr<ReviewedUser> ReviewUser(const std::string& token, absl::string_view who) const;

  const AuthenticatorOptions o_;
  ReviewWorkers* workers_;
};

}  // namespace topogang
