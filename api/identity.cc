#include "api/identity.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/jwt_claims.h"
#include "common/file_util.h"

namespace topogang {

namespace {

grpc::Status Error(grpc::StatusCode code, absl::string_view msg) {
  return grpc::Status(code, std::string(msg));
}

// A reviewer error as the caller sees it: no verdict, try again later. The message keeps the
// reviewer's reason (e.g. topogangd's own missing RBAC) so an operator can act on it.
grpc::Status ReviewError(absl::string_view what, const absl::Status& s) {
  return Error(grpc::StatusCode::UNAVAILABLE,
               absl::StrCat("cannot check the caller: ", what, " failed: ", s.message()));
}

// Printable, bounded text from outside (token review errors, usernames) for messages.
std::string Quote(absl::string_view s) {
  std::string out(s.substr(0, 200));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

}  // namespace

absl::StatusOr<TokenFile> ParseTokenFile(absl::string_view text, absl::string_view source) {
  TokenFile out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_no, ": ", what));
    };
    if (parts.size() != 2) return bad("expected 'TOKEN NODE' or 'TOKEN @admin'");
    std::string token(parts[0]);
    if (token.size() < 16) return bad("token shorter than 16 characters");
    if (out.node_by_token.count(token) || out.admin_tokens.count(token)) {
      return bad("token listed twice");
    }
    if (parts[1] == "@admin") {
      out.admin_tokens.insert(token);
    } else {
      out.node_by_token[token] = std::string(parts[1]);
    }
  }
  return out;
}

absl::StatusOr<TokenFile> LoadTokenFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseTokenFile(*text, path);
}

std::vector<std::string> Authenticator::CertIdentities(const grpc::ServerContextBase& ctx) {
  std::vector<std::string> out;
  auto auth = ctx.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return out;
  for (const char* prop : {"x509_common_name", "x509_subject_alternative_name"}) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(prop)) {
      out.emplace_back(v.data(), v.size());
    }
  }
  return out;
}

std::string Authenticator::BearerToken(const grpc::ServerContextBase& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  absl::string_view v(it->second.data(), it->second.size());
  if (!absl::ConsumePrefix(&v, "Bearer ")) return "";
  return std::string(absl::StripAsciiWhitespace(v));
}

std::optional<AgentGrant> Authenticator::AgentWithoutReview(const grpc::ServerContextBase& ctx,
                                                            absl::string_view node,
                                                            const std::string& token) const {
  std::vector<std::string> ids = CertIdentities(ctx);
  if (!ids.empty()) {
    for (const std::string& id : ids) {
      if (id == node) return AgentGrant{};
    }
    return AgentGrant{
        Error(grpc::StatusCode::PERMISSION_DENIED,
              absl::StrCat("client certificate names ", absl::StrJoin(ids, ", "), ", not node '",
                           node, "': an agent may only speak for its own node"))};
  }
  if (!token.empty()) {
    auto it = o_.tokens.node_by_token.find(token);
    if (it != o_.tokens.node_by_token.end()) {
      if (it->second == node) return AgentGrant{};
      return AgentGrant{Error(grpc::StatusCode::PERMISSION_DENIED,
                              absl::StrCat("token belongs to node '", it->second, "', not '", node,
                                           "': an agent may only speak for its own node"))};
    }
    if (o_.tokens.admin_tokens.count(token)) {
      return AgentGrant{Error(grpc::StatusCode::PERMISSION_DENIED,
                              "an admin token does not name a node: agents use their own")};
    }
    if (o_.token_reviewer != nullptr) return std::nullopt;  // a ServiceAccount token, perhaps
    return AgentGrant{Error(grpc::StatusCode::UNAUTHENTICATED, "unknown agent token")};
  }
  if (o_.allow_unauthenticated_agents) return AgentGrant{};
  return AgentGrant{Error(grpc::StatusCode::UNAUTHENTICATED,
                          "agent presented no client certificate and no bearer token")};
}

absl::StatusOr<ReviewedUser> Authenticator::ReviewUser(const std::string& token,
                                                       absl::string_view who) const {
  auto v = o_.token_reviewer->Review(token, o_.audiences);
  if (!v.ok()) {
    grpc::Status g = ReviewError("TokenReview", v.status());
    return absl::UnavailableError(g.error_message());
  }
  if (!v->authenticated) {
    return absl::UnauthenticatedError(
        absl::StrCat(who, " token refused by the API server (TokenReview): ",
                     v->error.empty() ? "not authenticated" : Quote(v->error)));
  }
  // TokenReviewStatus.audiences: "A client of the TokenReview API that sets the spec.audiences
  // field should validate that a compatible audience identifier is returned in the
  // status.audiences field" (k8s.io/api authentication/v1/types.go). Empty means the token is
  // for the API server itself: a token meant for the API server is never accepted here.
  bool audience_ok = false;
  for (const std::string& a : v->audiences) {
    for (const std::string& want : o_.audiences) audience_ok |= a == want;
  }
  if (!audience_ok) {
    return absl::UnauthenticatedError(
        absl::StrCat(who, " token is not for audience ", absl::StrJoin(o_.audiences, "/"),
                     " (TokenReview says it is for [", Quote(absl::StrJoin(v->audiences, ",")),
                     "]): mount a projected serviceAccountToken with that audience"));
  }
  return v->user;
}

AgentGrant Authenticator::ReviewAgentToken(const std::string& token, absl::string_view node) const {
  auto user = ReviewUser(token, "agent");
  if (!user.ok()) {
    return AgentGrant{
        Error(static_cast<grpc::StatusCode>(user.status().code()), user.status().message())};
  }
  if (!o_.agent_usernames.count(user->username)) {
    return AgentGrant{Error(grpc::StatusCode::PERMISSION_DENIED,
                            absl::StrCat("user '", Quote(user->username),
                                         "' is not an agent service account (allowed: ",
                                         absl::StrJoin(o_.agent_usernames, ", "), ")"))};
  }
  auto it = user->extra.find(kNodeNameExtra);
  if (it == user->extra.end() || it->second.size() != 1 || it->second[0].empty()) {
    return AgentGrant{Error(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("token of '", Quote(user->username), "' is not bound to a node (no ",
                     kNodeNameExtra,
                     "): use the projected serviceAccountToken of the agent pod (Kubernetes 1.30 "
                     "or later)"))};
  }
  if (it->second[0] != node) {
    return AgentGrant{
        Error(grpc::StatusCode::PERMISSION_DENIED,
              absl::StrCat("token is bound to node '", Quote(it->second[0]), "', not '", node,
                           "': an agent may only speak for its own node"))};
  }
  return AgentGrant{grpc::Status::OK, JwtExpiry(token).value_or(absl::InfiniteFuture())};
}

AgentGrant Authenticator::AuthorizeAgent(const grpc::ServerContextBase& ctx,
                                         absl::string_view node) const {
  const std::string token = BearerToken(ctx);
  if (auto g = AgentWithoutReview(ctx, node, token)) return *g;
  return ReviewAgentToken(token, node);
}

void Authenticator::AuthorizeAgentAsync(const grpc::ServerContextBase& ctx, const std::string& node,
                                        std::function<void(AgentGrant)> done) const {
  std::string token = BearerToken(ctx);
  if (auto g = AgentWithoutReview(ctx, node, token)) return done(*std::move(g));
  if (workers_ == nullptr) return done(ReviewAgentToken(token, node));
  // The job owns copies of everything it needs; `done` must keep its RPC alive until called.
  auto job = std::make_shared<std::function<void(AgentGrant)>>(std::move(done));
  const bool queued = workers_->Post([this, token, node, job](bool stopping) {
    if (stopping) {
      (*job)(AgentGrant{Error(grpc::StatusCode::UNAVAILABLE, "topogangd is shutting down")});
      return;
    }
    (*job)(ReviewAgentToken(token, node));
  });
  if (!queued) {
    (*job)(AgentGrant{Error(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "too many agents are being authenticated at once; retry shortly")});
  }
}

grpc::Status Authenticator::AuthorizeAdmin(const grpc::ServerContextBase& ctx,
                                           absl::string_view verb, absl::string_view node) const {
  const std::string token = BearerToken(ctx);
  if (!token.empty() && o_.tokens.admin_tokens.count(token)) return grpc::Status::OK;
  const std::string what = absl::StrCat(verb, " nodes.", kAdminApiGroup, " '", node, "'");
  if (o_.access_reviewer != nullptr && o_.token_reviewer != nullptr) {
    if (token.empty()) {
      return Error(grpc::StatusCode::UNAUTHENTICATED,
                   absl::StrCat(what,
                                " needs a bearer token: an @admin token, or a Kubernetes "
                                "token for audience ",
                                absl::StrJoin(o_.audiences, "/"), " of a user RBAC allows to ",
                                verb, " nodes.", kAdminApiGroup));
    }
    auto user = ReviewUser(token, "caller");
    if (!user.ok()) {
      return Error(static_cast<grpc::StatusCode>(user.status().code()), user.status().message());
    }
    auto allowed = o_.access_reviewer->Review(
        {*user, std::string(verb), kAdminApiGroup, kAdminResource, std::string(node)});
    if (!allowed.ok()) return ReviewError("SubjectAccessReview", allowed.status());
    if (!allowed->allowed) {
      return Error(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("user '", Quote(user->username), "' may not ", what, " (SubjectAccessReview",
                       allowed->reason.empty() ? "" : ": " + Quote(allowed->reason),
                       "); grant verb '", verb, "' on resource '", kAdminResource,
                       "' in apiGroup '", kAdminApiGroup, "'"));
    }
    return grpc::Status::OK;
  }
  if (o_.allow_unauthenticated_admin) return grpc::Status::OK;
  if (!o_.tokens.admin_tokens.empty()) {
    if (token.empty()) {
      return Error(grpc::StatusCode::UNAUTHENTICATED, "admin call needs a bearer token");
    }
    return Error(grpc::StatusCode::PERMISSION_DENIED, "token is not an admin token");
  }
  return Error(grpc::StatusCode::PERMISSION_DENIED,
               absl::StrCat(what,
                            " refused: no admin authorization is configured. Set "
                            "daemon.grpc.access_review (Kubernetes RBAC by SubjectAccessReview) "
                            "or put an '@admin' token in daemon.grpc.token_file "
                            "(docs/security.md)"));
}

}  // namespace topogang
