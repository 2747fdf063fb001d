#include "sim/policy_features.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace topogang::sim {

absl::StatusOr<std::string> ApplyPolicyFeatures(const std::string& name, SimOptions* opt) {
  std::vector<std::string> parts = absl::StrSplit(name, '+');
  const std::string base = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& f = parts[i];
    if (f == "preempt") {
      opt->preemption = true;
    } else if (f == "elastic") {
      opt->elastic = true;
    } else if (f == "spares") {
      opt->spares = true;
    } else if (f == "avoid-slow") {
      opt->avoid_slow = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("policy '", name, "': unknown feature '", f,
                       "' (known: preempt, elastic, spares, avoid-slow)"));
    }
  }
  if (base != "topogang" && (opt->preemption || opt->elastic || opt->spares || opt->avoid_slow)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy '", name,
        "': preemption, elastic gangs, spares and avoid-slow are simulated for topogang only"));
  }
  return base;
}

}  // namespace topogang::sim
