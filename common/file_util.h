// Reading whole files at the edges (CLI, daemon). The core libraries take text, never paths.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

// Reads a file into memory; refuses files over max_bytes so a wrong path (e.g. /dev/zero or a
// multi-GB log) fails fast instead of exhausting memory.
absl::StatusOr<std::string> ReadFileToString(absl::string_view path, size_t max_bytes = 256u << 20);

}  // namespace topogang
