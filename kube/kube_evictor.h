// Evicts pods through the API server's Eviction subresource (policy/v1), which honours
// PodDisruptionBudgets: POST /api/v1/namespaces/{ns}/pods/{name}/eviction, `?dryRun=All` for a
// dry run. Answers (k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go): 201 evicted;
// 429 a disruption budget forbids it now; 404 the pod is already gone; 409 its UID precondition
// failed (the pod was replaced: the victim is gone too).
#pragma once

#include <memory>

#include "daemon/evictor.h"
#include "kube/kube_client.h"

namespace topogang {

class KubeEvictor : public Evictor {
 public:
  explicit KubeEvictor(std::shared_ptr<KubeClient> client) : client_(std::move(client)) {}
  absl::Status Evict(const PodBinding& pod, bool dry_run) override;

 private:
  std::shared_ptr<KubeClient> client_;
};

}  // namespace topogang
