// kube-scheduler's HTTP extender client (pkg/scheduler/extender.go, HTTPExtender), byte for
// byte where it matters to an extender:
//
// - POST <urlPrefix without trailing '/'>/<verb>, Content-Type: application/json, User-Agent
//   Go-http-client/1.1, Accept-Encoding: gzip (a gzip reply is inflated, as Go's transport does).
// - Bodies in Go's field order with Go's HTML-safe escaping (<, >, & and U+2028/2029 as \uXXXX):
//   filter/prioritize {"Pod":{...},"Nodes":null,"NodeNames":[...]} when nodeCacheCapable, else
//   {"Pod":{...},"Nodes":{"metadata":{},"items":[...]},"NodeNames":null};
//   bind {"PodName","PodNamespace","PodUID","Node"}.
// - Only HTTP 200 is a reply ("failed <verb> with extender at URL <url>, code <n>" otherwise);
//   replies are decoded the way encoding/json does: keys match case-insensitively (exact match
//   preferred), unknown keys are ignored, a wrong type is an error, Score must be an integer.
// - httpTimeout (0 means 5 s) bounds every verb, in virtual time (see Clock).
// - Filter: a non-empty Error is an error; with nodeCacheCapable a returned name that was not
//   offered is an error; NodeNames (nodeCacheCapable) or Nodes.items give the passing nodes, and
//   a reply with neither passes none. Prioritize scores are returned as sent (the caller applies
//   weight x 10). Bind: a non-empty Error is a failure.
// - IsInterested: no managedResources, or a container/init container names one of them under
//   requests or limits.
//
// Thread-safety: thread-safe; Filter/Prioritize block, BindAsync does not.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/kubesched/api_objects.h"
#include "tests/kubesched/clock.h"
#include "tests/kubesched/node_filters.h"

namespace web::http::client {
class http_client;
}
namespace pplx {
class cancellation_token_source;
}

namespace topogang::kubesched {

class HttpPoster;

// Replies are decoded into an unordered document: an ordered_json object inserts each key with a
// linear search, which makes a 12,500-entry FailedNodes map quadratic.
using ReplyJson = nlohmann::json;

struct ManagedResource {
  std::string name;
  bool ignored_by_scheduler = false;
};

// KubeSchedulerConfiguration.extenders[] (staging/src/k8s.io/kube-scheduler/config/v1/types.go).
// The defaults are those of the captured configuration in shared/kube-scheduler-wire
// (deploy/scheduler-config.yaml minus preemptVerb, which is not modelled, and with weight 1).
struct ExtenderConfig {
  std::string url_prefix;
  std::string filter_verb = "filter";
  std::string prioritize_verb = "prioritize";
  std::string bind_verb = "bind";
  int64_t weight = 1;
  bool node_cache_capable = true;
  absl::Duration http_timeout = absl::Seconds(5);  // 0 means DefaultExtenderTimeout (5 s)
  std::vector<ManagedResource> managed_resources = {{"nvidia.com/gpu", false}};
  bool ignorable = false;
};

// What the filter verb said.
struct ExtenderFilterResult {
  std::vector<std::string> nodes;  // the nodes that pass, in the extender's order
  // nodes[i] among those offered, or null (a Nodes reply may name any node). Resolved through
  // the one name map HTTPExtender.Filter builds (fromNodeName), not a second one per cycle.
  std::vector<const NodeState*> offered;
  std::map<std::string, std::string> failed;                   // FailedNodes
  std::map<std::string, std::string> failed_and_unresolvable;  // FailedAndUnresolvableNodes
};

struct HostPriority {
  std::string host;
  int64_t score = 0;
};

// The extender's body encoding, exposed for tests: Go's json.Marshal escaping applied to `json`.
std::string GoJsonEscape(std::string json);

class ExtenderClient {
 public:
  ExtenderClient(ExtenderConfig config, const Clock* clock);
  ~ExtenderClient();

  const ExtenderConfig& config() const { return config_; }
  const std::string& Name() const { return config_.url_prefix; }
  bool IsInterested(const Pod& pod) const;
  bool IsFilter() const { return !config_.filter_verb.empty(); }
  bool IsPrioritizer() const { return !config_.prioritize_verb.empty(); }
  bool IsBinder() const { return !config_.bind_verb.empty(); }
  bool IsIgnorable() const { return config_.ignorable; }

  absl::StatusOr<ExtenderFilterResult> Filter(const Pod& pod,
                                              const std::vector<const NodeState*>& nodes);
  // Without a prioritizeVerb: every node scores 0 and no request is made.
  absl::StatusOr<std::vector<HostPriority>> Prioritize(const Pod& pod,
                                                       const std::vector<const NodeState*>& nodes);
  // Sends the bind verb and calls `done` (on an HTTP thread) with OK or the failure.
  void BindAsync(const Pod& pod, const std::string& node, std::function<void(absl::Status)> done);

  // Fails every request in flight and every later one (used when the emulator stops).
  void CancelAll();

 private:
  absl::StatusOr<ReplyJson> Send(const std::string& verb, std::string body);
  std::string ArgsBody(const Pod& pod, const std::vector<const NodeState*>& nodes) const;

  const ExtenderConfig config_;
  const Clock* clock_;
  std::string path_prefix_;             // the URL path of url_prefix, without trailing '/'
  std::unique_ptr<HttpPoster> poster_;  // filter, prioritize
  std::unique_ptr<web::http::client::http_client> client_;  // bind (asynchronous)
  std::unique_ptr<pplx::cancellation_token_source> cancel_;
};

// One pods/binding POST to the API server, as kube-scheduler's DefaultBinder does when no
// extender binds the pod. Calls `done` on an HTTP thread. Fails on anything but 2xx.
class ApiBinder {
 public:
  ApiBinder(const std::string& server_url, const Clock* clock);
  ~ApiBinder();
  void BindAsync(const Pod& pod, const std::string& node, std::function<void(absl::Status)> done);
  void CancelAll();

 private:
  std::unique_ptr<web::http::client::http_client> client_;
  std::unique_ptr<pplx::cancellation_token_source> cancel_;
};

}  // namespace topogang::kubesched
