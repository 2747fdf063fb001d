// Who is calling. An agent may only speak for its own node: the node must be named by its
// verified client certificate (CN or a SAN DNS name, mutual TLS) or by the bearer token it sends
// ("authorization: Bearer TOKEN", tokens mapped to nodes in a token file). Admin calls (drain)
// need an admin token when any is configured.
#pragma once

#include <grpcpp/server_context.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

struct TokenFile {
  std::map<std::string, std::string> node_by_token;  // agent tokens
  std::set<std::string> admin_tokens;
};

// Lines "TOKEN NODE" or "TOKEN @admin"; '#' comments and blank lines ignored. Tokens must be at
// least 16 characters; a token listed twice is an error.
absl::StatusOr<TokenFile> ParseTokenFile(absl::string_view text, absl::string_view source);
absl::StatusOr<TokenFile> LoadTokenFile(const std::string& path);

class Authenticator {
 public:
  Authenticator(TokenFile tokens, bool allow_unauthenticated_agents)
      : tokens_(std::move(tokens)), allow_unauthenticated_(allow_unauthenticated_agents) {}

  // OK when the caller may speak for `node`; PERMISSION_DENIED when its identity names another
  // node, UNAUTHENTICATED when it presents none (or an unknown token).
  grpc::Status AuthorizeAgent(const grpc::ServerContextBase& ctx, absl::string_view node) const;
  // OK when no admin token is configured or the caller sends one.
  grpc::Status AuthorizeAdmin(const grpc::ServerContextBase& ctx) const;

  // Identities in the verified client certificate (CN and SAN entries).
  static std::vector<std::string> CertIdentities(const grpc::ServerContextBase& ctx);
  // The bearer token in the metadata, "" when none.
  static std::string BearerToken(const grpc::ServerContextBase& ctx);

 private:
  TokenFile tokens_;
  bool allow_unauthenticated_;
};

}  // namespace topogang
