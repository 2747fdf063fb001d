// topogangd's own settings: the `daemon:` section of the config file, overridden by flags.
//
//   daemon:
//     http_port: 8888              bind_address: 0.0.0.0
//     url_prefix: /topogang        # kube-scheduler urlPrefix path part
//     filter_verb: filter          prioritize_verb: prioritize
//     bind_verb: bind              preempt_verb: preempt
//     gpu_resource: nvidia.com/gpu
//     bind_window_ms: 4000         # a held bind is answered then (below httpTimeout, 5s)
//     bind_parallelism: 64         # API server bindings in flight at once
//     max_body_bytes: 67108864
//     http_threads: 0              # 0 = min(4, max(2, cores)); verbs run on these threads
//     max_connections: 16384        # > the largest gang: each member waits at bind on its own
//     starvation_threshold_seconds: 600   # then GPUs are held for the oldest large gang
//     hold_min_gpus: 256                  # only gangs this large get holds (no patience)
//     max_holds: 1
//     large_gangs_in_order: false         # the overload setting (docs/placement-quality.md,
//     large_in_order_min_share: 0         # "Setting the queue for overload"): true, 0.125,
//     large_in_order_overload_backlog: 0  # 0.7 and {leaf: 300, spine: 300}; a gang's own
//     large_in_order_overload_memory_seconds: 172800
//     required_tier_max_wait_seconds: {}  # annotation wins
//     tls:                         # HTTPS on http_port (docs/security.md); absent: plain HTTP
//       cert_file: /tls/tls.crt    key_file: /tls/tls.key
//       client_ca_file: /tls/client-ca.crt   # set: only clients with a certificate from it
//       reload_interval_ms: 5000   # the files are re-read this often (rotation); 0 = never
//     idle_timeout_ms: 120000      read_timeout_ms: 10000   write_timeout_ms: 30000
//     max_inflight_body_bytes: 268435456   # request bodies in memory at once, all connections
//     health_port: 8889            # plain GET /healthz /readyz /metrics only (probes under mTLS)
//     spares:                      # hot spares (docs/spares.md); off by default
//       tier: leaf                 # "" = the tier right above the nodes
//       per_domain: 1              # idle nodes kept per domain of that tier, besides labelled ones
//     leader_election:             # cluster mode: one serving replica, warm standbys
//       enabled: true              # default: true in cluster mode, false standalone
//       lease_name: topogangd      lease_namespace: <pod's namespace, else kube-system>
//       lease_duration_ms: 15000   renew_deadline_ms: 10000   retry_period_ms: 2000
//     queue_journal:               # cluster mode: queue seniority (and the last large-gang
//                                  # overload) kept across restarts
//       enabled: true              # default: true in cluster mode (standalone: nothing to keep)
//       configmap: topogangd-queue # in the lease namespace
//       period_ms: 10000           # written this often when it changed, and at shutdown
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "extender/extender_service.h"
#include "extender/http_server.h"
#include "scheduler/node_slowness.h"
#include "scheduler/spares.h"

namespace topogang {

// client-go's defaults. Validity: 0 < retry_period < renew_deadline < lease_duration (the gap
// between renew_deadline and lease_duration is what keeps two replicas from serving at once).
struct LeaderElectionConfig {
  std::optional<bool> enabled;  // unset: on in cluster mode, off standalone
  std::string lease_name = "topogangd";
  std::string lease_namespace;  // "" = the pod's namespace (service account), else kube-system
  int64_t lease_duration_ms = 15000;
  int64_t renew_deadline_ms = 10000;
  int64_t retry_period_ms = 2000;
};

// The ConfigMap that keeps each waiting gang's arrival and the large gangs' last overload
// (kube/queue_journal.h).
struct QueueJournalConfig {
  bool enabled = true;
  std::string configmap = "topogangd-queue";  // a DNS subdomain
  int64_t period_ms = 10000;
};

struct DaemonConfig {
  HttpServerOptions http;
  HttpTransportOptions transport;  // TLS, timeouts, in-flight bytes, health port
  GangLedgerOptions extender;
  LeaderElectionConfig leader_election;
  QueueJournalConfig queue_journal;
  SlownessOptions slowness;  // the agents' slowness signals (DaemonState::slow_nodes)
  // daemon.spares (tier, per_domain); the tier is checked against the model when it is known.
  SpareOptions spares;
};

// Checks names (DNS subdomain / label) and the duration ordering; for values set by flags too.
absl::Status ValidateLeaderElection(const LeaderElectionConfig& c, absl::string_view source);

// cert_file and key_file together; client_ca_file only with them. For values set by flags too.
absl::Status ValidateTlsFiles(const TlsFiles& tls, absl::string_view source);

// `daemon` may be undefined (defaults). Unknown keys and bad values are errors with positions.
absl::StatusOr<DaemonConfig> ParseDaemonConfig(const YAML::Node& daemon, absl::string_view source);

}  // namespace topogang
