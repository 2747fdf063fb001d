// The PodScheduled=False condition kube-scheduler writes on a pod after a failed attempt
// (pkg/scheduler/schedule_one.go handleSchedulingFailure -> updatePod). It writes only when the
// condition changes (podutil.UpdatePodCondition, pkg/api/v1/pod/util.go: same status, reason
// and message is no write), so a pod refused again for the same reason causes no pod event,
// while a new message is one more pod MODIFIED event that every pod watcher (topogangd's too)
// receives, and that the scheduling queue sees as an update of the unschedulable pod itself.
#pragma once

#include <cpprest/http_client.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "tests/kubesched/api_objects.h"

namespace topogang::kubesched {

// The strategic merge patch of the pod's status that sets PodScheduled=False with `reason`
// (Unschedulable, SchedulerError) and `message`; nullopt when `pod` (as the failed attempt saw
// it) already carries that condition. lastTransitionTime stays when the status does not change.
std::optional<Json> PodScheduledFalsePatch(const Pod& pod, const std::string& reason,
                                           const std::string& message, absl::Time now);

// PATCHes pods/status at the API server without waiting for the answer: kube-scheduler logs a
// failed write and goes on (Emulator counts the writes sent, EmulatorCounters::condition_writes).
class PodConditionWriter {
 public:
  explicit PodConditionWriter(const std::string& server_url);
  ~PodConditionWriter();
  void PatchAsync(const Pod& pod, const Json& patch);
  void CancelAll();

 private:
  std::unique_ptr<web::http::client::http_client> client_;
  std::unique_ptr<pplx::cancellation_token_source> cancel_;
};

}  // namespace topogang::kubesched
