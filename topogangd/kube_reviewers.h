// The gRPC front end's reviewers (api/reviewers.h) answered by the Kubernetes API server:
// TokenReview and SubjectAccessReview through kube/review_client.h. Only adapts types; api/ and
// kube/ never include each other, so this lives where both meet. Tests use it too, against the
// fake API server.
#pragma once

#include <memory>

#include "api/reviewers.h"
#include "kube/review_client.h"

namespace topogang {

class KubeTokenReviewer : public TokenReviewer {
 public:
  explicit KubeTokenReviewer(std::shared_ptr<KubeReviewClient> c) : client_(std::move(c)) {}
  absl::StatusOr<TokenVerdict> Review(const std::string& token,
                                      const std::vector<std::string>& audiences) override;

 private:
  std::shared_ptr<KubeReviewClient> client_;
};

class KubeAccessReviewer : public AccessReviewer {
 public:
  explicit KubeAccessReviewer(std::shared_ptr<KubeReviewClient> c) : client_(std::move(c)) {}
  absl::StatusOr<AccessVerdict> Review(const AccessQuestion& q) override;

 private:
  std::shared_ptr<KubeReviewClient> client_;
};

}  // namespace topogang
