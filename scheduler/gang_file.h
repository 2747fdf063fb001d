// Jobs files (YAML) for dry-runs: a list of gangs placed in order. See docs/jobs-files.md.
#pragma once

#include <yaml-cpp/yaml.h>

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/gang.h"

namespace topogang {

absl::StatusOr<std::vector<GangSpec>> ParseJobsFile(absl::string_view text,
                                                    absl::string_view source);

// One gang from a YAML mapping (also used by the simulator's trace loader).
absl::StatusOr<GangSpec> ParseGangYaml(const YAML::Node& node, absl::string_view source,
                                       absl::string_view context);

}  // namespace topogang
