// The gang queue's keys of the config file's `daemon:` section, read the same way by topogangd
// (which runs that queue) and by `topogang simulate --config` (whose `topogang` policy then runs
// the queue the daemon would, instead of the defaults):
//
//   daemon: starvation_threshold_seconds (600), hold_min_gpus (256), max_holds (1),
//     locality_patience_seconds (1800), thin_side_patience_seconds (21600), keep_claim_clear,
//     large_gangs_in_order (false), large_in_order_min_share (0),
//     large_in_order_overload_backlog (0), large_in_order_overload_memory_seconds (172800),
//     required_tier_max_wait_seconds ({}; per tier, e.g. {leaf: 300, spine: 300})
//
// The section's other keys are the daemon's own (topogangd/daemon_config.h checks them all).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/queue_policy.h"

namespace topogang {

struct DaemonQueueConfig {
  QueueOptions queue;
  // Per required tier, how long it binds for gangs that give no wait of their own
  // (GangSpec::required_tier_max_wait); a tier not listed binds until the gang starts.
  std::map<std::string, absl::Duration> required_tier_max_wait;
};

// The keys ParseDaemonQueueConfig reads.
const std::set<std::string>& DaemonQueueKeys();

// Reads those keys of `daemon` (a mapping, or undefined/null: nothing to read) over `out`,
// keeping what is already there for absent keys. A bad value is an error with its position and
// key; keys that are not the queue's are left alone.
absl::Status ParseDaemonQueueConfig(const YAML::Node& daemon, absl::string_view source,
                                    DaemonQueueConfig& out);

}  // namespace topogang
