// Kubernetes resource quantities ("191450m", "2063554392Ki", "8", "1.5Gi", "1e3").
//
// kube-scheduler reads requests and allocatable through resource.Quantity: CPU as MilliValue(),
// everything else as Value(), both rounded up (k8s.io/apimachinery/pkg/api/resource/quantity.go;
// framework.Resource in pkg/scheduler/framework/types.go). We parse the same grammar exactly
// (integer arithmetic, no floating point) so a pod that fits on paper fits here too.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang::kubesched {

// ceil(quantity * 1000), saturated to the int64 range. For "cpu".
absl::StatusOr<int64_t> ParseQuantityMilli(absl::string_view text);
// ceil(quantity), saturated to the int64 range. For memory, pods and extended resources.
absl::StatusOr<int64_t> ParseQuantityValue(absl::string_view text);

}  // namespace topogang::kubesched
