// SubjectAccessReview (authorization.k8s.io/v1) on the wire: "may this user do this verb on this
// resource?", asked of the API server's authorizer (RBAC, webhooks) by POSTing to
// /apis/authorization.k8s.io/v1/subjectaccessreviews. Pure: no I/O (kube/review_client.h sends
// it), fuzzed by fuzz/review_fuzz.cc. Fields follow k8s.io/api authorization/v1/types.go
// (SubjectAccessReviewSpec, ResourceAttributes, SubjectAccessReviewStatus) and the server side
// pkg/registry/authorization/subjectaccessreview/rest.go.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

// spec: the subject (as TokenReview reported it) and spec.resourceAttributes.
struct SubjectAccessReviewSpec {
  std::string user, uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  std::string verb, group, resource, name, namespace_;  // namespace_ "" = cluster-scoped
};

struct SubjectAccessReviewStatus {
  bool allowed = false;
  bool denied = false;  // an authorizer said no outright (RBAC never does: it only allows)
  std::string reason, evaluation_error;
};

std::string MakeSubjectAccessReview(const SubjectAccessReviewSpec& spec);

// 200/201 with a SubjectAccessReview body: its status. Other codes: ApiCallError
// (kube/api_status.h), e.g. 403 when topogangd may not create subjectaccessreviews, 422 when the
// spec names neither user nor group. Garbage: FAILED_PRECONDITION naming the field.
absl::StatusOr<SubjectAccessReviewStatus> ParseSubjectAccessReviewResponse(int http_status,
                                                                           absl::string_view body);

}  // namespace topogang
