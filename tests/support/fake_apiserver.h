// A fake Kubernetes API server on loopback (LoopbackHttpServer) speaking the real JSON: Node and
// Pod lists with metadata.resourceVersion, chunked watch streams of newline-delimited
// {"type","object"} events (ADDED/MODIFIED/DELETED/BOOKMARK/ERROR), 410 Gone for compacted
// resourceVersions, dropped connections, the pods/binding subresource (201, 409 when already
// bound, 429 as priority and fairness refuses it), Event creation, and coordination.k8s.io/v1
// Leases (GET/POST/PUT with optimistic concurrency, plus outages and garbage records for the
// leader-election tests), and custom resources (PodGroups, JobSets, ...) with discovery
// (/apis/<group>/<version>), list and watch, and the review APIs the gRPC front end asks about its
// callers: TokenReview (tokens it knows, with their user, extra, audiences and expiry) and
// SubjectAccessReview (RBAC grants), answered with the real API server's shapes, codes and messages
// (fake_apiserver_reviews.cc).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "common/json_util.h"
#include "tests/support/lagged_delivery.h"

namespace topogang::testing {

class HttpExchange;
class LoopbackHttpServer;

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();

  std::string url() const { return url_; }

  // Objects; each change bumps the resourceVersion and is streamed to open watches.
  void PutNode(Json node);  // ADDED or MODIFIED
  void DeleteNode(const std::string& name);
  void PutPod(Json pod);
  void DeletePod(const std::string& ns, const std::string& name);
  Json GetPod(const std::string& ns, const std::string& name);
  std::vector<Json> Pods();  // every pod, one consistent snapshot

  void SendBookmark();
  // Watches end the way the real API server times them out (ListResource in
  // staging/src/k8s.io/apiserver/pkg/endpoints/handlers/get.go): after the client's
  // timeoutSeconds, else after --min-request-timeout times a random factor in [1, 2), so that
  // watches opened together do not all end together. The end is clean (whole events, then the
  // stream's end, through any SetWatchLag), and the client must watch again from the last
  // resourceVersion it saw. Both durations are cluster time, run `time_scale` times faster; for
  // watches opened after the call. Off until called: no watch ends by itself.
  void SetWatchTimeouts(double time_scale, absl::Duration min_request_timeout = absl::Minutes(30),
                        uint64_t seed = 1);
  int timed_out_watches();  // watches ended that way so far
  // Forgets history: open watches get an ERROR 410 event and later watches from an older
  // resourceVersion are answered 410 too, forcing a relist.
  void Compact();
  // Cuts every open watch in the middle of an event (a dropped connection).
  void DropWatches();
  // Watches opened from now on by clients whose User-Agent starts with `user_agent_prefix` get
  // every event (and their end) `lag` late, in order: that client's informer trailing the
  // others (topogangd's watch behind kube-scheduler's). With `per_event`, each event also waits
  // that long behind the one before (LaggedDelivery): a burst trails further. Lists are answered
  // at once. The lag is set once per server (a later call with another lag throws); later calls
  // change the prefix.
  void SetWatchLag(const std::string& user_agent_prefix, absl::Duration lag,
                   absl::Duration per_event = absl::ZeroDuration());
  // Watch writes (events and ends) sent through that lag so far: 0 if no client matched.
  uint64_t LaggedWatchWrites() const;

  // Every request must carry `Authorization: Bearer <token>` or gets the API's 401 Status
  // ("" = no authentication, the default).
  void RequireToken(const std::string& token);
  std::vector<std::string> authorizations();  // Authorization headers seen, in order
  int lists(const std::string& kind);         // "nodes" / "pods"
  int watches(const std::string& kind);
  int open_watches();
  std::vector<Json> bindings();
  // Runs before each pods/binding POST is handled (no lock held): tests delete or replace the pod
  // here, between the binder's read and its binding. Gets the pod's namespace and name.
  void SetBindingHook(std::function<void(const std::string& ns, const std::string& name)> hook);
  // The next `n` pods/binding POSTs are refused the way API Priority and Fairness refuses a
  // request it will not queue: 429, `Retry-After: 1` and a plain-text body, not a Status
  // (staging/src/k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go, tooManyRequests).
  void ThrottleBindings(int n);
  int throttled_bindings();  // refused so far
  // Runs before each list of nodes or pods is served (no lock held): tests change objects here,
  // between a watch's end and the relist, where no watch reports them. Gets "nodes" or "pods".
  void SetListHook(std::function<void(const std::string& kind)> hook);
  Json GetNode(const std::string& name);  // null when absent
  int node_patches();
  int pod_status_patches();  // PATCHes of pods/status (kube-scheduler's PodScheduled condition)
  std::vector<Json> events();
  // --- Leases -----------------------------------------------------------------------------------
  // GET 404 when absent; POST 201 or 409 AlreadyExists; PUT 404 when absent, 409 Conflict when
  // metadata.resourceVersion is stale, else 200 with the resourceVersion bumped.
  Json GetLease(const std::string& ns, const std::string& name);  // null when absent
  void SetLease(Json lease);  // as if another client wrote it (bumps the resourceVersion)
  // Serves `body` as-is (HTTP 200) on GET; a PUT against it is a 409 (garbage-record tests).
  void SetLeaseRaw(const std::string& ns, const std::string& name, const std::string& body);
  enum class Outage { kNone, kError, kHang };
  // Lease requests from clients with this bearer token ("" = every client) fail with 503
  // (kError) or get no answer until the outage ends (kHang).
  void SetLeaseOutage(Outage mode, const std::string& bearer_token = "");
  // Runs before each lease request is handled (no lock held): tests change the lease here to
  // force races. Gets the method ("GET", "POST", "PUT").
  void SetLeaseHook(std::function<void(const std::string& method)> hook);
  int lease_requests(const std::string& method);
  // spec.holderIdentity after every successful lease write, in order.
  std::vector<std::string> lease_holders();

  // --- ConfigMaps (fake_apiserver_configmaps.cc) ---------------------------------------------
  // GET, POST and PUT with the Lease semantics above.
  Json GetConfigMap(const std::string& ns, const std::string& name);  // null when absent
  void SetConfigMap(Json cm);          // as if another client wrote it (bumps the resourceVersion)
  void SetConfigMapOutage(bool down);  // every ConfigMap request fails with 503 while set
  int configmap_requests(const std::string& method);

  // --- Custom resources ------------------------------------------------------------------------
  // Serves /apis/<group>/<version>/<resource> (listed by discovery); unserved ones are 404.
  void ServeResource(const std::string& group, const std::string& version,
                     const std::string& resource);
  // List and watch of a served resource answer 403 Forbidden (missing RBAC) while set.
  void ForbidResource(const std::string& group, const std::string& resource, bool forbidden);
  void PutObject(const std::string& group, const std::string& version, const std::string& resource,
                 Json obj);  // ADDED or MODIFIED
  void DeleteObject(const std::string& group, const std::string& version,
                    const std::string& resource, const std::string& ns, const std::string& name);
  int discovery_requests();

  // --- TokenReview / SubjectAccessReview (fake_apiserver_reviews.cc) ---------------------------
  // A bearer token the fake's authenticator knows, as the API server would report it.
  struct FakeToken {
    std::string username, uid;
    std::vector<std::string> groups;
    std::map<std::string, std::vector<std::string>> extra;
    std::vector<std::string> audiences;  // the token's `aud`
    int64_t expires_unix = 0;            // 0 = never
  };
  // A pod-bound projected token of ServiceAccount ns/name in a pod on `node` (the extra keys of
  // Kubernetes 1.30+: pod-name, pod-uid, node-name, node-uid, credential-id).
  static FakeToken ServiceAccountToken(const std::string& ns, const std::string& name,
                                       const std::string& node, const std::string& audience,
                                       int64_t expires_unix = 0);
  void AddToken(const std::string& token, FakeToken t);
  void RemoveToken(const std::string& token);  // e.g. its pod was deleted
  // "Now" for token expiry, Unix seconds (0 = the real clock).
  void SetReviewTime(int64_t unix_seconds);
  // RBAC: `subject` (a username or a group) may `verb` `resource` in `api_group` (any name;
  // "*" matches anything).
  void Grant(const std::string& subject, const std::string& verb, const std::string& api_group,
             const std::string& resource);
  // topogangd's own RBAC: creating tokenreviews and subjectaccessreviews answers 403 while set.
  void ForbidReviews(bool forbidden);
  int token_reviews();                      // TokenReviews answered (any outcome)
  int access_reviews();                     // SubjectAccessReviews answered
  std::vector<Json> access_review_specs();  // spec of every SubjectAccessReview, in order

  // --- Evictions (policy/v1 pods/eviction, fake_apiserver_evictions.cc) ------------------------
  // A PodDisruptionBudget in `ns` over the pods carrying every label of `selector`: `allowed`
  // evictions of them may happen (its status.disruptionsAllowed), then 429 TooManyRequests.
  void AddDisruptionBudget(const std::string& ns, std::map<std::string, std::string> selector,
                           int allowed);
  std::vector<std::string> evictions();  // ns/name of every pod evicted (dry runs not counted)
  int eviction_dry_runs();

  // Blocks until pred() holds or the timeout passes (pred may call the accessors above).
  bool WaitFor(const std::function<bool()>& pred, int timeout_ms = 10000);

 private:
  struct Watch;
  void Emit(const std::string& kind, const std::string& type, const Json& obj);
  void ServeWatchLocked(const std::shared_ptr<HttpExchange>& request, const std::string& kind,
                        const std::map<std::string, std::string>& query,
                        std::unique_lock<std::mutex>& lock);
  // SetWatchTimeouts (fake_apiserver_watch_timeouts.cc): when a watch opened now with this
  // timeoutSeconds ("" when not given) ends, and the thread that ends it.
  absl::Time WatchDeadlineLocked(const std::string& timeout_seconds);
  void EndTimedOutWatches();
  void StopWatchTimeouts();
  double watch_time_scale_ = 0;  // 0: off
  absl::Duration min_request_timeout_;
  std::mt19937_64 timeout_rng_;
  std::condition_variable reaper_cv_;
  std::thread reaper_;
  bool reaper_stop_ = false;
  int timed_out_watches_ = 0;
  void Handle(const std::shared_ptr<HttpExchange>& request);
  void HandleLease(const std::shared_ptr<HttpExchange>& request,
                   const std::vector<std::string>& parts, const std::string& body);
  void HandleConfigMap(const std::shared_ptr<HttpExchange>& request, const std::string& method,
                       const std::vector<std::string>& parts, const std::string& body);
  void HandleTokenReview(const std::shared_ptr<HttpExchange>& request, const std::string& body);
  void HandleAccessReview(const std::shared_ptr<HttpExchange>& request, const std::string& body);
  void HandleEviction(const std::shared_ptr<HttpExchange>& request, const std::string& ns,
                      const std::string& name, const std::string& body, bool dry_run);
  struct Budget {
    std::string ns;
    std::map<std::string, std::string> selector;
    int allowed = 0;
  };
  std::vector<Budget> budgets_;
  std::vector<std::string> evictions_;
  int eviction_dry_runs_ = 0;
  static void Reply(const std::shared_ptr<HttpExchange>& request, int code, const Json& body);
  static Json StatusBody(int code, const std::string& reason, const std::string& message);

  std::string url_;
  std::unique_ptr<LoopbackHttpServer> server_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t rv_ = 100;
  int64_t compacted_rv_ = 0;
  std::map<std::string, Json> nodes_;
  std::map<std::string, Json> pods_;  // ns/name
  struct Change {
    int64_t rv;
    std::string kind, type;
    Json obj;
  };
  std::vector<Change> history_;
  std::vector<std::shared_ptr<Watch>> watches_;
  std::unique_ptr<LaggedDelivery> watch_lag_;  // SetWatchLag
  absl::Duration watch_lag_duration_, watch_lag_per_event_;
  std::string watch_lag_agent_;
  bool shutting_down_ = false;  // the destructor: watches are answered 503
  std::map<std::string, int> lists_, watch_count_;
  // "group/version/resource" -> ns/name -> object
  std::map<std::string, std::map<std::string, Json>> custom_;
  std::set<std::string> forbidden_;  // "group/resource"
  int discovery_requests_ = 0;
  void HandleCustom(const std::shared_ptr<HttpExchange>& request,
                    const std::vector<std::string>& parts);
  std::vector<Json> bindings_, events_;
  int node_patches_ = 0, pod_status_patches_ = 0;
  static void MergePodStatusPatch(Json* pod, const Json& patch);
  std::string required_token_;
  std::vector<std::string> authorizations_;
  struct StoredLease {
    Json obj;
    std::string raw;  // when set, served instead of obj
  };
  std::map<std::string, StoredLease> leases_;  // ns/name
  std::map<std::string, Json> configmaps_;     // ns/name
  bool configmap_outage_ = false;
  std::map<std::string, int> configmap_requests_;
  Outage lease_outage_ = Outage::kNone;
  std::string outage_token_;
  std::vector<std::shared_ptr<HttpExchange>> hung_;  // requests left unanswered (kHang)
  std::function<void(const std::string&)> lease_hook_;
  std::function<void(const std::string&, const std::string&)> binding_hook_;
  int bindings_to_throttle_ = 0, throttled_bindings_ = 0;
  std::function<void(const std::string&)> list_hook_;
  std::map<std::string, int> lease_requests_;
  std::vector<std::string> lease_holders_;
  void ReleaseHungLocked();
  std::map<std::string, FakeToken> tokens_;
  int64_t review_time_ = 0;
  struct Rule {
    std::string subject, verb, group, resource;
  };
  std::vector<Rule> rules_;
  bool reviews_forbidden_ = false;
  int token_reviews_ = 0, access_reviews_ = 0;
  std::vector<Json> access_review_specs_;
};

// A Node object as the API server returns it.
Json MakeNode(const std::string& name, int gpus, const std::map<std::string, std::string>& labels);

}  // namespace topogang::testing
