// A small Kubernetes API client over cpprestsdk's http_client: GET/POST/PUT JSON and streaming
// watches (newline-delimited events read as they arrive). TLS is verified against the
// configured CA; client certificates and bearer tokens are supported.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "daemon/binder.h"
#include "kube/kube_config.h"

namespace web::http::client {
class http_client;
}

namespace topogang {

struct HttpResult {
  int status = 0;
  std::string body;
};

class KubeClient {
 public:
  // request_timeout bounds GET/POST/PUT (not watches). The leader elector uses its own client
  // with a short one, so a hung API server cannot keep it waiting past its renew deadline.
  explicit KubeClient(KubeConfig config, absl::Duration request_timeout = absl::Seconds(30));
  ~KubeClient();

  // path includes the query, e.g. "/api/v1/nodes?limit=500".
  absl::StatusOr<HttpResult> Get(const std::string& path);
  absl::StatusOr<HttpResult> Post(const std::string& path, const std::string& json_body);
  // Replaces an object (optimistic concurrency: the body carries metadata.resourceVersion).
  absl::StatusOr<HttpResult> Put(const std::string& path, const std::string& json_body);
  // JSON merge patch (RFC 7386): only the fields named change; null deletes a key.
  absl::StatusOr<HttpResult> MergePatch(const std::string& path, const std::string& json_body);

  // Opens a watch and calls on_line for every complete line until the server ends the stream,
  // the connection drops, on_line returns false, or Cancel() is called. Returns the HTTP status
  // of the watch response (200 when it streamed; e.g. 410 when the resourceVersion is too old).
  absl::StatusOr<int> Watch(const std::string& path,
                            const std::function<bool(absl::string_view line)>& on_line);
  // Aborts every watch in progress and makes later ones return at once.
  void Cancel();

  const std::string& server() const { return config_.server; }

 private:
  std::string Token();
  absl::StatusOr<HttpResult> Send(const char* method, const std::string& path,
                                  const std::string* json_body,
                                  const char* content_type = "application/json");

  KubeConfig config_;
  std::unique_ptr<web::http::client::http_client> client_;
  std::unique_ptr<web::http::client::http_client> watch_client_;
  std::mutex token_mu_;
  std::string token_;
  absl::Time token_read_;
  // Exec plugin token: refreshed before it expires, after a 401, and retried no faster than
  // every few seconds when the plugin fails.
  std::optional<absl::Time> exec_expires_;
  bool exec_stale_ = true;
  absl::Time exec_retry_after_ = absl::InfinitePast();
  void TokenRejected();
  struct CancelState;
  std::unique_ptr<CancelState> cancel_;
};

// Binds pods through POST /api/v1/namespaces/{ns}/pods/{name}/binding, after reading the pod
// and refusing one that is not pending with the UID and scheduler name seen at filter
// (bind_check.h). Already bound to the same node (a retried bind) is success.
class KubeBinder : public Binder {
 public:
  explicit KubeBinder(std::shared_ptr<KubeClient> client) : client_(std::move(client)) {}
  absl::Status Bind(const PodBinding& b) override;

 private:
  std::shared_ptr<KubeClient> client_;
};

// core/v1 Event JSON for a pod (reason, message, type Normal/Warning), for POST
// /api/v1/namespaces/{ns}/events.
std::string MakePodEvent(const PodBinding& pod, absl::string_view type, absl::string_view reason,
                         absl::string_view message, absl::Time now);

// Escapes a path segment (pod and namespace names are DNS labels, but never trust input).
std::string PathEscape(absl::string_view s);

}  // namespace topogang
