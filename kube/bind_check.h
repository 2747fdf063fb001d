// Whether the API server's copy of a pod may be bound as topogang is about to bind it.
//
// Why: /filter and /bind bodies come from the network. A forged filter body can name any pod;
// the binding subresource itself checks only that the pod exists, is unbound and (when given)
// has the UID. Before topogang binds, it reads the pod and requires it to be pending, not being
// deleted, with the UID and the spec.schedulerName topogang saw at filter (docs/security.md).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "common/json_util.h"
#include "daemon/binder.h"

namespace topogang {

enum class BindCheck {
  kBind,              // pending as expected: bind it
  kAlreadyBoundHere,  // bound to b.node already (a retried binding that went through)
};

// The verdict for `live` (a Pod object as GET returns it). Errors: AlreadyExists when it is bound
// to another node (as the binding subresource would answer), NotFound when it has another UID
// (the pod filtered is gone), FailedPrecondition naming what differs otherwise (another
// scheduler, being deleted, a malformed object).
absl::StatusOr<BindCheck> CheckBindable(const Json& live, const PodBinding& b);

}  // namespace topogang
