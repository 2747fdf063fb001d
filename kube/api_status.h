// What a failed Kubernetes API call means for its caller: the HTTP code and the body the API
// server sends with it (a meta/v1 Status: {"kind":"Status","reason":"Forbidden","message":...})
// become an absl::Status whose message names the call and quotes the server. Pure: no I/O.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace topogang {

// `what` names the call ("TokenReview"). 401/403: PERMISSION_DENIED (topogangd's own credentials
// or RBAC are missing; the message says to check deploy/rbac.yaml); 400/404/409/422:
// FAILED_PRECONDITION; everything else (5xx, 429, no status): UNAVAILABLE, worth retrying.
// The server's message is cut at 300 bytes; a body that is not a Status is quoted the same way.
absl::Status ApiCallError(absl::string_view what, int http_status, absl::string_view body);

}  // namespace topogang
