#include "kube/api_status.h"

#include "absl/strings/str_cat.h"
#include "common/json_util.h"

namespace topogang {

namespace {

constexpr size_t kMaxQuoted = 300;

// Keeps a message printable on one log line: control bytes become '?'.
std::string Printable(absl::string_view s) {
  std::string out(s.substr(0, kMaxQuoted));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

}  // namespace

absl::Status ApiCallError(absl::string_view what, int http_status, absl::string_view body) {
  std::string msg;
  if (auto j = ParseJson(body); j.ok()) {
    if (auto m = JsonString(*j, "message", "Status.message"); m.ok() && !m->empty()) {
      msg = Printable(*m);
    }
  }
  if (msg.empty()) msg = body.empty() ? "(no body)" : Printable(body);
  std::string text = absl::StrCat(what, ": HTTP ", http_status, ": ", msg);
  switch (http_status) {
    case 401:
      return absl::PermissionDeniedError(
          absl::StrCat(text, " (the API server refused topogangd's own credentials)"));
    case 403:
      return absl::PermissionDeniedError(absl::StrCat(
          text, " (topogangd's service account lacks the right: see deploy/rbac.yaml)"));
    case 400:
    case 404:
    case 409:
    case 422:
      return absl::FailedPreconditionError(text);
    default:
      return absl::UnavailableError(text);
  }
}

}  // namespace topogang
