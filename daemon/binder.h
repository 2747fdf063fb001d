// Who performs a binding once a gang's barrier opens: the API server's binding subresource in a
// cluster, or an in-memory record in standalone mode. Called from the ledger's worker thread,
// never from an HTTP handler thread and never under the ledger lock.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"

namespace topogang {

// One pod to bind to one node (the fields of the pods/binding subresource topogang needs).
struct PodBinding {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
  // spec.schedulerName of the pod topogang filtered; the cluster binder refuses a pod that the
  // API server shows under another scheduler (a forged /filter body cannot get a pod bound that
  // its own scheduler is meant to place). Empty: not checked (bindings not seen through filter).
  std::string scheduler_name = {};
  // Annotations the binding puts on the pod: the binding subresource copies its metadata's
  // annotations onto the pod as it binds it (k8s.io/kubernetes pkg/registry/core/pod/storage/
  // storage.go, setPodHostAndAnnotations), so a gang member's rank is there before its
  // containers start, with no extra write. Gang members get topogang.io/rank and
  // topogang.io/world-size.
  std::map<std::string, std::string> annotations = {};
};

class Binder {
 public:
  virtual ~Binder() = default;
  virtual absl::Status Bind(const PodBinding& binding) = 0;
};

// Standalone mode: records bindings ("namespace/name" -> node). A pod already bound elsewhere is
// a conflict, as the API server would say.
class MemoryBinder : public Binder {
 public:
  absl::Status Bind(const PodBinding& b) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string key = b.pod_namespace + "/" + b.pod_name;
    auto [it, inserted] = bound_.emplace(key, b.node);
    if (!inserted && it->second != b.node) {
      return absl::AlreadyExistsError("pod " + key + " is already bound to " + it->second);
    }
    return absl::OkStatus();
  }
  std::map<std::string, std::string> Bindings() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bound_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> bound_;
};

}  // namespace topogang
