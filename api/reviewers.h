// What the gRPC front end asks about a caller beyond what the TLS handshake and the token file
// say: who a bearer token belongs to (TokenReviewer) and whether that user may do something
// (AccessReviewer). In a cluster both are the API server (TokenReview and SubjectAccessReview,
// kube/review_client.h, wired in topogangd/main.cc); api/ knows only these interfaces, so tests
// and the standalone daemon can run without Kubernetes. Implementations must be thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace topogang {

// A user as the authenticator describes it (Kubernetes' user.Info).
struct ReviewedUser {
  std::string username, uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

struct TokenVerdict {
  bool authenticated = false;
  std::string error;  // why not, in the reviewer's words
  ReviewedUser user;
  // Audiences the token is valid for among those asked; empty with authenticated=true means
  // "valid for the API server itself", which topogangd does not accept (audiences differ).
  std::vector<std::string> audiences;
};

class TokenReviewer {
 public:
  virtual ~TokenReviewer() = default;
  // An unknown, expired or wrong-audience token is an OK verdict with authenticated=false. An
  // error means no verdict: unreachable (UNAVAILABLE), not allowed to ask (PERMISSION_DENIED),
  // an answer that made no sense (FAILED_PRECONDITION).
  virtual absl::StatusOr<TokenVerdict> Review(const std::string& token,
                                              const std::vector<std::string>& audiences) = 0;
};

// "May `user` do `verb` on `resource` `name` in API group `group`?" (cluster-scoped).
struct AccessQuestion {
  ReviewedUser user;
  std::string verb, group, resource, name;
};

struct AccessVerdict {
  bool allowed = false;
  std::string reason;  // the authorizer's, e.g. RBAC's "allowed by ClusterRoleBinding ..."
};

class AccessReviewer {
 public:
  virtual ~AccessReviewer() = default;
  // Not allowed is an OK verdict; an error means no verdict (as for TokenReviewer).
  virtual absl::StatusOr<AccessVerdict> Review(const AccessQuestion& q) = 0;
};

}  // namespace topogang
