// Keeps the group objects gang conventions are sized from (k8s/group_objects.h) current: asks the
// API server which of their kinds it serves (GET /apis/<group>/<version>, preferred version
// first), then lists and watches each served kind cluster-wide into a thread-safe cache that
// GangLedger reads through GroupObjectLookup. A cluster without a kind is normal: no error and
// no watch; kinds not served are asked again every `rediscover` (a CRD installed later). A kind
// topogang may not read (403, at discovery or list) answers lookups with that reason instead of
// leaving pods waiting. A watched version that stops being served (404 after an upgrade or a CRD
// removal) drops the kind's cache and discovers it again at once.
#pragma once

#include <array>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "k8s/gang_conventions.h"
#include "kube/kube_client.h"

namespace topogang {

struct GroupObjectsWatchOptions {
  std::string gpu_resource = "nvidia.com/gpu";
  absl::Duration backoff_initial = absl::Milliseconds(200);
  absl::Duration backoff_max = absl::Seconds(10);
  absl::Duration rediscover = absl::Seconds(60);
  int watch_timeout_seconds = 300;
  int list_page_size = 500;
};

class GroupObjectsWatch : public GroupObjectLookup {
 public:
  // `client` should be this watch's own: Stop() cancels every watch of the client.
  GroupObjectsWatch(std::shared_ptr<KubeClient> client, GroupObjectsWatchOptions options = {});
  ~GroupObjectsWatch() override;

  void Start();
  void Stop();
  // True once every kind was discovered and every served kind listed once.
  bool WaitSynced(absl::Duration timeout);

  Result Find(GroupKind kind, const std::string& ns, const std::string& name) const override;

  // For logs and tests: the version watched for `kind`, "" when not served.
  std::string ServedVersion(GroupKind kind) const;

 private:
  struct KindState {
    bool discovered = false;
    std::string version;    // served version ("" = not served)
    std::string forbidden;  // set while the API server refuses us (RBAC)
    bool listed = false;
    bool running = false;  // its watch thread exists
    std::string rv;
    std::map<std::string, GroupObject> objects;  // ns/name
  };
  void DiscoveryLoop();
  // The served version of `kind`, "" when none; an error when the API server cannot tell.
  absl::StatusOr<std::string> Discover(GroupKind kind);
  void KindLoop(GroupKind kind);
  absl::Status ListKind(GroupKind kind, const std::string& base);
  bool HandleLine(GroupKind kind, absl::string_view line);  // false: relist (410)
  // Waits `d`, or less when a kind asked to be discovered again; false when stopping.
  bool SleepFor(absl::Duration d);
  // The watched version of `kind` went away: forget it, wake discovery (under mu_).
  void UnservedLocked(GroupKind kind, const std::string& why);
  std::string Base(GroupKind kind, const std::string& version) const;

  std::shared_ptr<KubeClient> client_;
  GroupObjectsWatchOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool rediscover_now_ = false;
  std::array<KindState, kNumGroupKinds> kinds_;
  std::vector<std::thread> threads_;
};

}  // namespace topogang
