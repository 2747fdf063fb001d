// The expiry of a bearer token, when it is a JWT (projected ServiceAccount tokens are): the
// payload's `exp` claim (RFC 7519 4.1.4, seconds since the epoch). Read without checking the
// signature, so it is only ever used for a token the API server has just authenticated
// (TokenReview): it bounds how long a stream opened with that token may stay open, since
// TokenReview does not say. Pure; fuzzed by fuzz/review_fuzz.cc.
#pragma once

#include <optional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace topogang {

// nullopt when the token is not three base64url parts, the payload is not a JSON object, or it
// has no numeric `exp` in a sane range (after 1970, before 9999).
std::optional<absl::Time> JwtExpiry(absl::string_view token);

}  // namespace topogang
