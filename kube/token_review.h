// TokenReview (authentication.k8s.io/v1) on the wire: the request topogangd POSTs to
// /apis/authentication.k8s.io/v1/tokenreviews to ask the API server who a bearer token belongs
// to, and the answer it reads back. Pure: no I/O (kube/review_client.h sends it), so the parser
// is fuzzed (fuzz/review_fuzz.cc). Field names and meanings follow k8s.io/api
// authentication/v1/types.go (TokenReviewSpec, TokenReviewStatus, UserInfo) and the server side
// pkg/registry/authentication/tokenreview/storage.go.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

// TokenReviewStatus, flattened (status.user.* lifted up).
struct TokenReviewStatus {
  bool authenticated = false;
  std::string error;  // status.error: why the token could not be authenticated
  std::string username, uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  // The intersection of spec.audiences and the token's audiences; empty with authenticated=true
  // means the token is valid for the API server's own audience only.
  std::vector<std::string> audiences;
};

// {"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":...,
// "audiences":[...]}}. Empty audiences: the API server checks against its own audience.
std::string MakeTokenReview(absl::string_view token, const std::vector<std::string>& audiences);

// The API server's answer. 200/201 with a TokenReview body: its status (an unknown, expired or
// wrongly-audienced token is authenticated=false, not an error). Other codes: ApiCallError
// (kube/api_status.h), e.g. 403 when topogangd may not create tokenreviews. A body that is not a
// TokenReview, or has fields of the wrong type: FAILED_PRECONDITION naming the field.
absl::StatusOr<TokenReviewStatus> ParseTokenReviewResponse(int http_status, absl::string_view body);

}  // namespace topogang
