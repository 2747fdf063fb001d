#include "kube/review_client.h"

namespace topogang {

absl::StatusOr<TokenReviewStatus> KubeReviewClient::ReviewToken(
    const std::string& token, const std::vector<std::string>& audiences) {
  auto r = client_->Post("/apis/authentication.k8s.io/v1/tokenreviews",
                         MakeTokenReview(token, audiences));
  if (!r.ok()) return r.status();
  return ParseTokenReviewResponse(r->status, r->body);
}

absl::StatusOr<SubjectAccessReviewStatus> KubeReviewClient::ReviewAccess(
    const SubjectAccessReviewSpec& spec) {
  auto r = client_->Post("/apis/authorization.k8s.io/v1/subjectaccessreviews",
                         MakeSubjectAccessReview(spec));
  if (!r.ok()) return r.status();
  return ParseSubjectAccessReviewResponse(r->status, r->body);
}

}  // namespace topogang
