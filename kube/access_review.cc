#include "kube/access_review.h"

#include "absl/strings/str_cat.h"
#include "common/json_util.h"
#include "kube/api_status.h"

namespace topogang {

namespace {

constexpr size_t kMaxString = 4096;

absl::Status Bad(absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat("SubjectAccessReview answer: ", what));
}

absl::StatusOr<std::string> String(const Json& obj, absl::string_view key, absl::string_view path) {
  auto s = JsonString(obj, key, path);
  if (!s.ok()) return Bad(s.status().message());
  if (s->size() > kMaxString) return Bad(absl::StrCat(path, " longer than ", kMaxString));
  return s;
}

}  // namespace

std::string MakeSubjectAccessReview(const SubjectAccessReviewSpec& s) {
  Json attrs = {{"verb", s.verb}, {"group", s.group}, {"resource", s.resource}};
  if (!s.name.empty()) attrs["name"] = s.name;
  if (!s.namespace_.empty()) attrs["namespace"] = s.namespace_;
  Json spec = {{"resourceAttributes", attrs}};
  if (!s.user.empty()) spec["user"] = s.user;
  if (!s.uid.empty()) spec["uid"] = s.uid;
  if (!s.groups.empty()) spec["groups"] = s.groups;
  // The authorizer sees the same extra the authenticator reported (pod name, node name, ...), so
  // policies that key on them (e.g. a webhook authorizer) decide as they would for the API.
  if (!s.extra.empty()) spec["extra"] = s.extra;
  return DumpJson(Json{
      {"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}});
}

absl::StatusOr<SubjectAccessReviewStatus> ParseSubjectAccessReviewResponse(int http_status,
                                                                           absl::string_view body) {
  if (http_status != 200 && http_status != 201) {
    return ApiCallError("SubjectAccessReview", http_status, body);
  }
  auto j = ParseJson(body);
  if (!j.ok()) return Bad(j.status().message());
  if (!j->is_object()) return Bad("not a JSON object");
  auto kind = String(*j, "kind", "kind");
  if (!kind.ok()) return kind.status();
  if (*kind != "SubjectAccessReview") {
    return Bad(absl::StrCat("kind is '", kind->substr(0, 64), "'"));
  }
  SubjectAccessReviewStatus out;
  auto status = JsonObject(*j, "status", "status");
  if (!status.ok()) return Bad(status.status().message());
  if (*status == nullptr) return out;  // no status: not allowed
  const Json& st = **status;
  auto allowed = JsonBool(st, "allowed", "status.allowed");
  if (!allowed.ok()) return Bad(allowed.status().message());
  auto denied = JsonBool(st, "denied", "status.denied");
  if (!denied.ok()) return Bad(denied.status().message());
  auto reason = String(st, "reason", "status.reason");
  if (!reason.ok()) return reason.status();
  auto eval = String(st, "evaluationError", "status.evaluationError");
  if (!eval.ok()) return eval.status();
  // types.go: "If both allowed is false and denied is false, then the authorizer has no opinion
  // on whether to authorize the action. Denied may not be true if Allowed is true." A body that
  // says both anyway is never read as allowed.
  out.allowed = *allowed && !*denied;
  out.denied = *denied;
  out.reason = *reason;
  out.evaluation_error = *eval;
  return out;
}

}  // namespace topogang
