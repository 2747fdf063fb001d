#include "kube/token_review.h"

#include "absl/strings/str_cat.h"
#include "common/json_util.h"
#include "kube/api_status.h"

namespace topogang {

namespace {

// Bounds on what one answer may carry. Real answers have a handful of groups and five extra keys;
// these only keep a garbled or hostile body from costing unbounded memory per cached entry.
constexpr size_t kMaxList = 1024;
constexpr size_t kMaxString = 4096;

absl::Status Bad(absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat("TokenReview answer: ", what));
}

absl::StatusOr<std::string> String(const Json& obj, absl::string_view key, absl::string_view path) {
  auto s = JsonString(obj, key, path);
  if (!s.ok()) return Bad(s.status().message());
  if (s->size() > kMaxString) return Bad(absl::StrCat(path, " longer than ", kMaxString));
  return s;
}

// A JSON array of strings (absent/null: empty).
absl::StatusOr<std::vector<std::string>> StringList(const Json* arr, absl::string_view path) {
  std::vector<std::string> out;
  if (arr == nullptr || arr->is_null()) return out;
  if (!arr->is_array()) return Bad(absl::StrCat(path, ": expected an array"));
  if (arr->size() > kMaxList) return Bad(absl::StrCat(path, ": more than ", kMaxList, " entries"));
  for (const Json& v : *arr) {
    if (!v.is_string()) return Bad(absl::StrCat(path, ": expected strings"));
    if (v.get_ref<const std::string&>().size() > kMaxString) {
      return Bad(absl::StrCat(path, ": entry longer than ", kMaxString));
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

std::string MakeTokenReview(absl::string_view token, const std::vector<std::string>& audiences) {
  Json spec = {{"token", std::string(token)}};
  if (!audiences.empty()) spec["audiences"] = audiences;
  return DumpJson(
      Json{{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", spec}});
}

absl::StatusOr<TokenReviewStatus> ParseTokenReviewResponse(int http_status,
                                                           absl::string_view body) {
  if (http_status != 200 && http_status != 201) {
    return ApiCallError("TokenReview", http_status, body);
  }
  auto j = ParseJson(body);
  if (!j.ok()) return Bad(j.status().message());
  if (!j->is_object()) return Bad("not a JSON object");
  auto kind = String(*j, "kind", "kind");
  if (!kind.ok()) return kind.status();
  if (*kind != "TokenReview") return Bad(absl::StrCat("kind is '", kind->substr(0, 64), "'"));
  TokenReviewStatus out;
  auto status = JsonObject(*j, "status", "status");
  if (!status.ok()) return Bad(status.status().message());
  if (*status == nullptr) return out;  // no status: nothing was authenticated
  const Json& st = **status;
  auto authenticated = JsonBool(st, "authenticated", "status.authenticated");
  if (!authenticated.ok()) return Bad(authenticated.status().message());
  out.authenticated = *authenticated;
  auto error = String(st, "error", "status.error");
  if (!error.ok()) return error.status();
  out.error = *error;
  auto audiences = StringList(GoField(st, "audiences"), "status.audiences");
  if (!audiences.ok()) return audiences.status();
  out.audiences = *std::move(audiences);
  auto user = JsonObject(st, "user", "status.user");
  if (!user.ok()) return Bad(user.status().message());
  if (*user == nullptr) return out;
  const Json& u = **user;
  auto username = String(u, "username", "status.user.username");
  if (!username.ok()) return username.status();
  out.username = *username;
  auto uid = String(u, "uid", "status.user.uid");
  if (!uid.ok()) return uid.status();
  out.uid = *uid;
  auto groups = StringList(GoField(u, "groups"), "status.user.groups");
  if (!groups.ok()) return groups.status();
  out.groups = *std::move(groups);
  auto extra = JsonObject(u, "extra", "status.user.extra");
  if (!extra.ok()) return Bad(extra.status().message());
  if (*extra != nullptr) {
    if ((*extra)->size() > kMaxList) return Bad("status.user.extra: too many keys");
    for (auto it = (*extra)->begin(); it != (*extra)->end(); ++it) {
      if (it.key().size() > kMaxString) return Bad("status.user.extra: key too long");
      auto values = StringList(&it.value(), absl::StrCat("status.user.extra[", it.key(), "]"));
      if (!values.ok()) return values.status();
      out.extra[it.key()] = *std::move(values);
    }
  }
  return out;
}

}  // namespace topogang
