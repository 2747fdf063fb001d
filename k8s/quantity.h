// Kubernetes resource quantities ("8", "1k", "2Ki", "1e3", "500m"), parsed exactly. Extended
// resources such as GPUs are whole numbers, so we only need an exact integer reading; anything
// fractional, malformed or absurdly large is an error rather than a rounded guess.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

// Values above this are rejected as "too large" (well inside int64 so callers can add them up).
inline constexpr int64_t kMaxQuantity = int64_t{1} << 50;

// Parses the Kubernetes quantity grammar (sign, digits, optional fraction, and one suffix of
// binary SI Ki..Ei, decimal SI n u m k M G T P E, or an exponent e/E<int>) and returns the value
// if it is a whole number in [-kMaxQuantity, kMaxQuantity].
absl::StatusOr<int64_t> ParseIntegerQuantity(absl::string_view text);

}  // namespace topogang
