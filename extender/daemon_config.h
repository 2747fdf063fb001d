// topogangd's own settings: the `daemon:` section of the config file, overridden by flags.
//
//   daemon:
//     http_port: 8888              bind_address: 0.0.0.0
//     url_prefix: /topogang        # kube-scheduler urlPrefix path part
//     filter_verb: filter          prioritize_verb: prioritize
//     bind_verb: bind              preempt_verb: preempt
//     gpu_resource: nvidia.com/gpu
//     bind_window_ms: 4000         # below kube-scheduler's extender httpTimeout (5s)
//     max_body_bytes: 67108864
//     http_threads: 0              # 0 = min(4, max(2, cores)); verbs run on these threads
//     max_connections: 1024
//     starvation_threshold_seconds: 600   # then GPUs are held for the oldest large gang
//     hold_min_gpus: 64                   # only gangs this large get holds
//     max_holds: 1
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "absl/status/statusor.h"
#include "extender/extender_service.h"
#include "extender/http_server.h"

namespace topogang {

struct DaemonConfig {
  HttpServerOptions http;
  ExtenderOptions extender;
};

// `daemon` may be undefined (defaults). Unknown keys and bad values are errors with positions.
absl::StatusOr<DaemonConfig> ParseDaemonConfig(const YAML::Node& daemon, absl::string_view source);

}  // namespace topogang
