// Strict, position-aware readers for YAML input. Every outside file (cluster, jobs, config) goes
// through these so that a bad value is reported as "file:line:col: key: what is wrong" instead of
// a yaml-cpp exception or a silently defaulted field.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

// "source:line:col" for a node (1-based), or just source when the node has no mark.
std::string YamlWhere(absl::string_view source, const YAML::Node& node);

// Parses text; syntax errors become InvalidArgument with the position.
absl::StatusOr<YAML::Node> YamlParse(absl::string_view text, absl::string_view source);

// Fails with the unknown key's position if `map` has a key not in `allowed` (catches typos).
absl::Status YamlCheckKeys(const YAML::Node& map, absl::string_view source,
                           const std::set<std::string>& allowed, absl::string_view context);

// Scalar readers: missing key → default (or error when required); wrong type or out-of-range
// value → InvalidArgument naming the position and the key.
absl::StatusOr<int64_t> YamlInt(const YAML::Node& map, absl::string_view key,
                                absl::string_view source, int64_t min, int64_t max,
                                std::optional<int64_t> default_value);
absl::StatusOr<double> YamlDouble(const YAML::Node& map, absl::string_view key,
                                  absl::string_view source, double min, double max,
                                  std::optional<double> default_value);
absl::StatusOr<std::string> YamlString(const YAML::Node& map, absl::string_view key,
                                       absl::string_view source,
                                       std::optional<std::string> default_value);
absl::StatusOr<bool> YamlBool(const YAML::Node& map, absl::string_view key,
                              absl::string_view source, bool default_value);
// A sequence of non-empty strings; missing or null → empty.
absl::StatusOr<std::vector<std::string>> YamlStringList(const YAML::Node& map,
                                                        absl::string_view key,
                                                        absl::string_view source);

}  // namespace topogang
