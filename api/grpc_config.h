// The `daemon.grpc` section of the config file -> GrpcServerOptions, for topogangd's main:
//
//   daemon:
//     grpc:
//       address: 0.0.0.0:9090
//       tls: {cert: /tls/tls.crt, key: /tls/tls.key, client_ca: /tls/ca.crt,
//             require_client_cert: true}
//       token_file: /secrets/agent-tokens     # "TOKEN NODE" / "TOKEN @admin" lines
//       allow_unauthenticated_agents: false
//       allow_unauthenticated_admin: false    # Drain/Undrain from anyone (demos only)
//       token_review:                         # agents: projected ServiceAccount tokens
//         audiences: [topogang]
//         agent_service_accounts: [topogang-system/topogang-agent]
//         cache_ttl_seconds: 10  negative_cache_ttl_seconds: 10  timeout_ms: 5000  workers: 4
//       access_review:                        # Drain/Undrain: SubjectAccessReview (RBAC)
//         cache_ttl_seconds: 10  negative_cache_ttl_seconds: 10
//       datagram_port: 0          # UDP heartbeats: 0 = the gRPC port, -1 = off (streams only)
//       datagram_batch_ms: 50
//       max_connection_idle_seconds: 300
//       heartbeat_interval_seconds: 10
//       heartbeat_window_seconds: 30
//       monitor_period_ms: 1000
//       max_receive_bytes: 1048576
//       fatal_xids: [48, 61, 62, 64, 74, 79, 94, 95, 119, 120, 140]
#pragma once

#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"
#include "api/grpc_server.h"

namespace topogang {

// `grpc` may be undefined (defaults). Unknown keys and bad values are errors with positions.
absl::StatusOr<GrpcServerOptions> ParseGrpcConfig(const YAML::Node& grpc, absl::string_view source);

}  // namespace topogang
