// Policy names with the features of issue #13 switched on: "topogang+preempt",
// "topogang+elastic", "topogang+spares" and any combination ("topogang+preempt+spares"). Naming
// them in the policy list lets one `topogang simulate` run compare a policy with and without a
// feature on the same trace, side by side in one table.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "sim/engine.h"

namespace topogang::sim {

// The base policy of `name`, with the features it names switched on in `opt`. InvalidArgument
// for an unknown feature, or a feature on a policy other than topogang (only topogang runs the
// daemon's scheduler, which these features are built on).
absl::StatusOr<std::string> ApplyPolicyFeatures(const std::string& name, SimOptions* opt);

}  // namespace topogang::sim
