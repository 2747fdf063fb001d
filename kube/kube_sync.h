// Keeps the model in step with the API server: lists Nodes and Pods, then watches both (with
// resourceVersion and bookmarks), relisting on 410 Gone and reconnecting with backoff.
//  - With no tiers configured (`preset: auto`), the tiers come from the label family the GPU
//    nodes carry (topology/label_family.h), detected at the first rebuild that finds one and
//    logged in one line (plus one per report: mixed families, nodes without labels).
//  - Node set or node GPU/label changes rebuild the Cluster model (bound pods re-adopted,
//    pending gang reservations re-planned), bursts folded into one rebuild; a deleted node is
//    marked unhealthy at once, so nothing is steered to it meanwhile.
//  - Cordon (spec.unschedulable), NoSchedule/NoExecute taints and NotReady set the matching
//    DaemonState health source at once.
//  - Bound GPU pods in a non-terminal phase hold GPUs; terminal or deleted pods free them.
//  - Nodes labelled topogang.io/spare=true are the marked hot spares (DaemonState's pool), applied
//    at once when the label changes.
// Also posts Kubernetes Events for the service's gang notices.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "daemon/daemon_state.h"
#include "daemon/gang_ledger.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "kube/kube_client.h"
#include "topology/topology_config.h"

namespace topogang {

struct KubeSyncOptions {
  absl::Duration backoff_initial = absl::Milliseconds(200);
  absl::Duration backoff_max = absl::Seconds(10);
  int watch_timeout_seconds = 300;
  int list_page_size = 500;
  // Node-set and topology-label changes rebuild the model (O(cluster + pods)). An autoscaler
  // adding 200 nodes sends 200 events within seconds: they are folded into one rebuild once no
  // change came for rebuild_quiet, and at most rebuild_max_delay after the first.
  absl::Duration rebuild_quiet = absl::Milliseconds(250);
  absl::Duration rebuild_max_delay = absl::Seconds(2);
};

class KubeSync {
 public:
  KubeSync(std::shared_ptr<KubeClient> client, DaemonState& state, TopologyConfig topology,
           std::string gpu_resource, KubeSyncOptions options = {});
  ~KubeSync();

  // Must be called before Start. on_ready runs once after the first full list.
  void Attach(GangLedger* ledger, std::function<void()> on_ready);
  void Start();
  void Stop();

  // For tests and /readyz: true once the first list was applied.
  bool WaitSynced(absl::Duration timeout);
  int64_t relists() const { return relists_; }
  int64_t rebuilds() const { return rebuilds_; }
  int64_t events_posted() const { return events_posted_; }

 private:
  absl::Status ListAll(bool list_nodes, bool list_pods);
  // Lists page by page (limit/continue), handing each item to `each`; returns the list's
  // resourceVersion.
  absl::StatusOr<std::string> List(const std::string& path,
                                   const std::function<void(const Json&)>& each);
  void WatchLoop(bool nodes);
  // Returns false when the watch must relist (410).
  bool HandleLine(bool nodes, absl::string_view line);
  void ApplyNodeLocked(const KubeNode& n, bool deleted);
  void RebuildLocked();
  void ScheduleRebuildLocked();
  void RebuildLoop();
  void ApplyHealth(const KubeNode& n);
  void EventLoop();
  bool SleepFor(absl::Duration d);  // false when stopping

  std::shared_ptr<KubeClient> client_;
  DaemonState& state_;
  // With `detect` (no tiers configured) until the GPU nodes' label family is known.
  TopologyConfig topology_;
  std::string detection_logged_;  // the last summary logged: one line per change, not rebuild
  void ApplyDrainLocked(const KubeNode& n);
  // The nodes labelled topogang.io/spare=true, handed to DaemonState (which rebuilds its pool).
  void PushSparesLocked();
  std::map<std::string, std::string> drains_applied_;  // node -> "1"+reason last applied
  // True when a label the tiers are built from differs (other labels never rebuild the model).
  bool TierLabelsDiffer(const std::map<std::string, std::string>& a,
                        const std::map<std::string, std::string>& b) const;
  std::string resource_;
  KubeSyncOptions options_;
  GangLedger* service_ = nullptr;
  std::function<void()> on_ready_;

  std::mutex apply_mu_;  // serializes every change applied to the service/state
  std::map<std::string, KubeNode> nodes_;
  std::map<std::string, PodInfo> pods_;  // by UID (or ns/name), GPU pods only
  std::string node_rv_, pod_rv_;
  bool rebuild_needed_ = false;
  absl::Time rebuild_first_, rebuild_last_;  // of the pending changes (when rebuild_needed_)
  bool rebuild_stop_ = false;
  std::condition_variable rebuild_cv_;  // with apply_mu_

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool synced_ = false;
  std::deque<GangNotice> notices_;
  std::vector<std::thread> threads_;
  std::atomic<int64_t> relists_{0}, rebuilds_{0}, events_posted_{0};
};

}  // namespace topogang
