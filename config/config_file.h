// The one YAML configuration file shared by the CLI, the simulator and the daemon:
//   topology:  tiers, labels, bandwidths (topology_config.h)
//   scheduler: reservation_ttl_seconds, auto_apply_replacements
//   daemon:    left as YAML for the daemon's own parser
// See docs/configuration.md.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/gang_scheduler.h"
#include "topology/topology_config.h"

namespace topogang {

struct TopogangConfig {
  std::optional<TopologyConfig> topology;  // absent: the cluster file's, else the topograph preset
  SchedulerOptions scheduler;
  YAML::Node daemon;  // undefined when absent
};

absl::StatusOr<TopogangConfig> ParseConfigFile(absl::string_view text, absl::string_view source);

}  // namespace topogang
