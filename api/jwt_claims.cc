#include "api/jwt_claims.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "common/json_util.h"

namespace topogang {

std::optional<absl::Time> JwtExpiry(absl::string_view token) {
  // Projected tokens are ~1 KiB; anything much larger is not one of them.
  if (token.size() > 64 * 1024) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  if (parts.size() != 3 || parts[1].empty()) return std::nullopt;
  std::string payload;
  if (!absl::WebSafeBase64Unescape(parts[1], &payload)) return std::nullopt;
  auto j = ParseJson(payload);
  if (!j.ok() || !j->is_object()) return std::nullopt;
  auto exp = j->find("exp");  // claim names are case-sensitive (RFC 7519 4)
  if (exp == j->end() || !exp->is_number()) return std::nullopt;
  const double secs = exp->get<double>();
  // 253402300800 = 10000-01-01T00:00:00Z.
  if (!(secs > 0 && secs < 253402300800.0)) return std::nullopt;
  return absl::FromUnixSeconds(static_cast<int64_t>(secs));
}

}  // namespace topogang
