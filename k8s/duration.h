// Durations in pod labels and annotations, in Go's time.ParseDuration syntax, as kubectl users
// write them ("45m", "4h", "1h30m"). A bare number is refused: "3600" could mean seconds or
// minutes, and a wrong guess would silently change how a gang is scheduled.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace topogang {

// InvalidArgument naming `where` (e.g. "annotation topogang.io/runtime-estimate") for a value
// that is malformed, infinite, above `max`, or not positive (zero allowed with `allow_zero`).
absl::StatusOr<absl::Duration> ParseKubeDuration(absl::string_view where, absl::string_view text,
                                                 absl::Duration max, bool allow_zero = false);

}  // namespace topogang
