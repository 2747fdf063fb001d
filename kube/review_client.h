// Asks the API server about callers of topogangd's gRPC API: TokenReview (who does this bearer
// token belong to) and SubjectAccessReview (may that user do this). One POST each over the
// KubeClient; no caching here (api/review_cache.h caches, topogangd/main.cc wires the two).
// Thread-safe (KubeClient is).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/access_review.h"
#include "kube/kube_client.h"
#include "kube/token_review.h"

namespace topogang {

class KubeReviewClient {
 public:
  explicit KubeReviewClient(std::shared_ptr<KubeClient> client) : client_(std::move(client)) {}

  // POST /apis/authentication.k8s.io/v1/tokenreviews. Errors: UNAVAILABLE (unreachable, 5xx),
  // PERMISSION_DENIED (topogangd lacks tokenreviews create), FAILED_PRECONDITION (garbage).
  absl::StatusOr<TokenReviewStatus> ReviewToken(const std::string& token,
                                                const std::vector<std::string>& audiences);
  // POST /apis/authorization.k8s.io/v1/subjectaccessreviews; errors as above.
  absl::StatusOr<SubjectAccessReviewStatus> ReviewAccess(const SubjectAccessReviewSpec& spec);

 private:
  std::shared_ptr<KubeClient> client_;
};

}  // namespace topogang
