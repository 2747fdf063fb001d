// Reading JSON the way Go's encoding/json does, which is what produced (and what consumes) the
// extender wire format: object keys match struct fields case-insensitively (an exact match wins),
// `null` is "not set", and a value of the wrong type is an error, not a silent default.
// ordered_json keeps key order, so objects echoed back (NodeList items) stay as they came.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang {

using Json = nlohmann::ordered_json;

// Parses text; syntax errors become InvalidArgument naming the byte offset, and nesting deeper
// than 1024 levels is refused (deeper values overflow the stack when nlohmann copies them).
absl::StatusOr<Json> ParseJson(absl::string_view text);

// The member of `obj` named `key` (exact match first, then case-insensitive), or nullptr when
// obj is not an object, the key is absent, or its value is null.
const Json* GoField(const Json& obj, absl::string_view key);

// Typed readers over GoField. Absent/null → the default; wrong type → InvalidArgument naming
// `what` (a path such as "Pod.metadata.name").
absl::StatusOr<std::string> JsonString(const Json& obj, absl::string_view key,
                                       absl::string_view what);
absl::StatusOr<bool> JsonBool(const Json& obj, absl::string_view key, absl::string_view what);
absl::StatusOr<int64_t> JsonInt(const Json& obj, absl::string_view key, absl::string_view what);
// An object or array (or nullptr when absent/null); wrong type → error.
absl::StatusOr<const Json*> JsonObject(const Json& obj, absl::string_view key,
                                       absl::string_view what);
absl::StatusOr<const Json*> JsonArray(const Json& obj, absl::string_view key,
                                      absl::string_view what);

// Go's json.Marshal escapes <, >, & and U+2028/2029; nlohmann does not, which is still valid
// JSON. We emit nlohmann's form (both are accepted by Go's decoder).
std::string DumpJson(const Json& j);

// Appends `s` as a JSON string literal (quotes included). For hot paths that build large replies
// by hand: nlohmann's ordered_json inserts into objects in linear time, so a 12,500-entry
// FailedNodes map built through it would be quadratic. Bytes that are not UTF-8 (a message cut
// mid-character, a peer's raw bytes) are written as \ufffd, as Go's encoding/json does.
void AppendJsonString(std::string* out, absl::string_view s);

}  // namespace topogang
