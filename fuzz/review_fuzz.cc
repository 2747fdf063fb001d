// libFuzzer target for what the gRPC front end reads about its callers from outside: the API
// server's TokenReview and SubjectAccessReview answers (any HTTP status, any body), its Status
// error bodies, and the `exp` claim of a bearer token (any bytes an agent sends). Whatever parses
// must make sense: an allowed SubjectAccessReview is never also denied, every string is within the
// parser's bounds, and an expiry is a sane time.
//   bash scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/jwt_claims.h"
#include "kube/access_review.h"
#include "kube/api_status.h"
#include "kube/token_review.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace topogang;
  if (size < 2 || size > 256 * 1024) return 0;
  const uint8_t mode = data[0];
  // 200 and 201 are the API server's answers; every other status is an error body.
  const int status = data[1] < 128 ? (data[1] & 1 ? 201 : 200) : 300 + data[1];
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  switch (mode % 4) {
    case 0: {
      auto r = ParseTokenReviewResponse(status, text);
      if (r.ok()) {
        if (r->username.size() > 4096 || r->error.size() > 4096 || r->groups.size() > 1024 ||
            r->audiences.size() > 1024 || r->extra.size() > 1024) {
          std::abort();  // past the parser's own bounds
        }
        if (status != 200 && status != 201) std::abort();  // an error answer read as a verdict
      }
      break;
    }
    case 1: {
      auto r = ParseSubjectAccessReviewResponse(status, text);
      if (r.ok() && r->allowed && r->denied) std::abort();
      if (r.ok() && status != 200 && status != 201) std::abort();
      break;
    }
    case 2: {
      absl::Status s = ApiCallError("TokenReview", status, text);
      if (s.ok() || s.message().size() > 600) std::abort();
      break;
    }
    default: {
      auto t = JwtExpiry(text);
      if (t && (*t <= absl::UnixEpoch() || *t > absl::FromUnixSeconds(253402300800))) std::abort();
      break;
    }
  }
  return 0;
}
