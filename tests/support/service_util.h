// Helpers for tests that drive ExtenderService directly (no HTTP).
#pragma once

#include <future>
#include <memory>
#include <string>

#include "common/json_util.h"
#include "daemon/daemon_state.h"
#include "extender/extender_service.h"
#include "k8s/pod_info.h"

namespace topogang::testing {

// Binds `pod` to `node`; the future gets the bind's error ("" = bound) when the service answers
// (at once, or when the gang's barrier opens or expires).
inline std::future<std::string> BindPod(ExtenderService& service, const Json& pod,
                                        const std::string& node) {
  auto p = std::make_shared<std::promise<std::string>>();
  auto f = p->get_future();
  service.Bind(
      {pod["metadata"]["name"], pod["metadata"]["namespace"], pod["metadata"]["uid"], node},
      [p](const ExtenderBindingResult& r) { p->set_value(r.error); });
  return f;
}

// What the watch reports for a pod (namespace default, uid "uid-<name>") that has finished (on
// `node`, when given), with the GPUs it requested.
inline PodInfo FinishedPod(const std::string& name, const std::string& node = "", int gpus = 0) {
  PodInfo p;
  p.gpus = gpus;
  p.name = name;
  p.namespace_ = "default";
  p.uid = "uid-" + name;
  p.node_name = node;
  p.phase = "Succeeded";
  return p;
}

// GPUs not free (allocated or unhealthy) in the model.
inline int UsedGpus(DaemonState& state) {
  return state.With([](GangScheduler& s) {
    const Cluster& c = s.cluster();
    return c.num_gpus() - c.FreeHealthy(0);
  });
}

}  // namespace topogang::testing
