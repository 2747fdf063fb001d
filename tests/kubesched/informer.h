// A list-then-watch informer for one core/v1 resource, over plain HTTP, as client-go's
// reflector and shared informer feed kube-scheduler (k8s.io/client-go/tools/cache/reflector.go):
//
// - List, turn the difference to the local store into add/update/delete callbacks (a relist
//   after a lost watch says "deleted" for objects that vanished meanwhile), then watch from the
//   list's resourceVersion with bookmarks.
// - Each watch asks the API server to end it after timeoutSeconds, 5 minutes times a random factor
//   in [1, 2) (the reflector's minWatchTimeout), so that watches do not hang unseen.
// - A watch that ends is reopened from the last resourceVersion seen; "410 Gone" (as a status
//   or an ERROR event) or any other failure relists after a short pause.
// - `keep` filters objects as a field selector would (kube-scheduler's pod informer drops
//   Succeeded and Failed pods): an object that stops matching is reported deleted.
//
// Callbacks run on the informer's own thread, one at a time, in event order.
// Thread-safety: Start/Stop from one thread; the counters are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "tests/kubesched/api_objects.h"

namespace pplx {
class cancellation_token_source;
}

namespace topogang::kubesched {

class Informer {
 public:
  struct Handlers {
    std::function<void(const Json& obj)> on_add;
    std::function<void(const Json& old_obj, const Json& new_obj)> on_update;
    std::function<void(const Json& obj)> on_delete;
  };
  // `path` is the collection, e.g. "/api/v1/nodes". `retry_pause` is the real-time wait before a
  // relist after a failure.
  Informer(std::string server_url, std::string path, Handlers handlers,
           std::function<bool(const Json&)> keep = nullptr,
           absl::Duration retry_pause = absl::Milliseconds(50));
  ~Informer();

  void Start();
  // Cancels the open request and joins the thread. No callback runs after it returns.
  void Stop();

  // The first list has been delivered.
  bool HasSynced() const { return synced_.load(); }
  int lists() const { return lists_.load(); }
  int watches() const { return watches_.load(); }

 private:
  void Run();
  bool ListAndSync();
  // Returns true to keep watching from resource_version_, false to relist.
  bool WatchOnce();
  void Apply(const std::string& type, const Json& obj);
  void PauseBeforeRetry();

  const std::string server_url_, path_;
  const Handlers handlers_;
  const std::function<bool(const Json&)> keep_;
  const absl::Duration retry_pause_;

  std::map<std::string, Json> store_;  // namespace/name -> object (informer thread only)
  std::string resource_version_;
  std::mt19937_64 timeout_rng_{1};  // each watch's timeoutSeconds
  std::atomic<bool> synced_{false}, stopping_{false};
  std::atomic<int> lists_{0}, watches_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<pplx::cancellation_token_source> cancel_;
  std::thread thread_;
};

}  // namespace topogang::kubesched
