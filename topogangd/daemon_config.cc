#include "topogangd/daemon_config.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/yaml_util.h"
#include "config/queue_config.h"

namespace topogang {

namespace {

// RFC 1123 subdomain (Lease names) or label (namespaces): lowercase alphanumerics, '-', '.'.
bool IsDnsName(absl::string_view s, bool allow_dots, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  if (!absl::ascii_isalnum(s.front()) || !absl::ascii_isalnum(s.back())) return false;
  for (char c : s) {
    if (absl::ascii_isupper(c)) return false;
    if (!absl::ascii_isalnum(c) && c != '-' && !(allow_dots && c == '.')) return false;
  }
  return true;
}

absl::StatusOr<LeaderElectionConfig> ParseLeaderElection(const YAML::Node& n,
                                                         absl::string_view source) {
  LeaderElectionConfig c;
  if (!n.IsDefined() || n.IsNull()) return c;
  if (!n.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, n), ": daemon.leader_election: expected a mapping"));
  }
  if (absl::Status s = YamlCheckKeys(n, source,
                                     {"enabled", "lease_name", "lease_namespace",
                                      "lease_duration_ms", "renew_deadline_ms", "retry_period_ms"},
                                     "daemon.leader_election");
      !s.ok()) {
    return s;
  }
  if (n["enabled"].IsDefined() && !n["enabled"].IsNull()) {
    auto e = YamlBool(n, "enabled", source, false);
    if (!e.ok()) return e.status();
    c.enabled = *e;
  }
  auto name = YamlString(n, "lease_name", source, c.lease_name);
  if (!name.ok()) return name.status();
  c.lease_name = *name;
  auto ns = YamlString(n, "lease_namespace", source, c.lease_namespace);
  if (!ns.ok()) return ns.status();
  c.lease_namespace = *ns;
  for (auto [key, field] : {std::pair{"lease_duration_ms", &c.lease_duration_ms},
                            std::pair{"renew_deadline_ms", &c.renew_deadline_ms},
                            std::pair{"retry_period_ms", &c.retry_period_ms}}) {
    auto v = YamlInt(n, key, source, 1, 3600000, *field);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  if (absl::Status s = ValidateLeaderElection(c, YamlWhere(source, n)); !s.ok()) return s;
  return c;
}

absl::StatusOr<QueueJournalConfig> ParseQueueJournal(const YAML::Node& n,
                                                     absl::string_view source) {
  QueueJournalConfig c;
  if (!n.IsDefined() || n.IsNull()) return c;
  if (!n.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, n), ": daemon.queue_journal: expected a mapping"));
  }
  if (absl::Status s =
          YamlCheckKeys(n, source, {"enabled", "configmap", "period_ms"}, "daemon.queue_journal");
      !s.ok()) {
    return s;
  }
  auto e = YamlBool(n, "enabled", source, c.enabled);
  if (!e.ok()) return e.status();
  c.enabled = *e;
  auto name = YamlString(n, "configmap", source, c.configmap);
  if (!name.ok()) return name.status();
  if (!IsDnsName(*name, true, 253)) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, n["configmap"]), ": daemon.queue_journal: configmap \"",
                     *name, "\" is not a DNS subdomain (lowercase letters, digits, '-', '.')"));
  }
  c.configmap = *name;
  // At least a second: each write is one API request; at most an hour of seniority at risk.
  auto period = YamlInt(n, "period_ms", source, 1000, 3600000, c.period_ms);
  if (!period.ok()) return period.status();
  c.period_ms = *period;
  return c;
}

// `daemon.tls`: both files or neither; a client CA only with them.
absl::Status ParseTls(const YAML::Node& n, absl::string_view source, HttpTransportOptions& t) {
  if (!n.IsDefined() || n.IsNull()) return absl::OkStatus();
  if (!n.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, n), ": daemon.tls: expected a mapping"));
  }
  if (absl::Status s = YamlCheckKeys(
          n, source, {"cert_file", "key_file", "client_ca_file", "reload_interval_ms"},
          "daemon.tls");
      !s.ok()) {
    return s;
  }
  for (auto [key, field] :
       {std::pair{"cert_file", &t.tls.cert_file}, std::pair{"key_file", &t.tls.key_file},
        std::pair{"client_ca_file", &t.tls.client_ca_file}}) {
    auto v = YamlString(n, key, source, *field);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  auto reload = YamlInt(n, "reload_interval_ms", source, 0, 86400000, t.tls_reload_interval_ms);
  if (!reload.ok()) return reload.status();
  t.tls_reload_interval_ms = static_cast<int>(*reload);
  return ValidateTlsFiles(t.tls, YamlWhere(source, n));
}

// `daemon.spares`: whole nodes kept idle per domain for replacements (scheduler/spares.h).
absl::Status ParseSpares(const YAML::Node& n, absl::string_view source, SpareOptions& o) {
  if (!n.IsDefined() || n.IsNull()) return absl::OkStatus();
  if (!n.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        YamlWhere(source, n), ": daemon.spares: expected a mapping (tier, per_domain)"));
  }
  if (absl::Status s = YamlCheckKeys(n, source, {"tier", "per_domain"}, "daemon.spares"); !s.ok()) {
    return s;
  }
  auto tier = YamlString(n, "tier", source, o.tier);
  if (!tier.ok()) return tier.status();
  if (*tier == "node") {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, n["tier"]), ": daemon.spares.tier: spares are counted per ",
                     "domain of a tier above the nodes (leaf, an NVLink domain...), not \"node\""));
  }
  o.tier = *tier;
  // More than a handful per domain is a reserved partition, not spares; 1,000 catches typos.
  auto per = YamlInt(n, "per_domain", source, 0, 1000, o.per_domain);
  if (!per.ok()) return per.status();
  o.per_domain = static_cast<int>(*per);
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTlsFiles(const TlsFiles& tls, absl::string_view source) {
  auto bad = [&](absl::string_view msg) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": daemon.tls: ", msg));
  };
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return bad(tls.cert_file.empty() ? "key_file is set but cert_file is not"
                                     : "cert_file is set but key_file is not");
  }
  if (!tls.client_ca_file.empty() && tls.cert_file.empty()) {
    return bad("client_ca_file needs cert_file and key_file (client certificates need HTTPS)");
  }
  return absl::OkStatus();
}

absl::Status ValidateLeaderElection(const LeaderElectionConfig& c, absl::string_view source) {
  auto bad = [&](absl::string_view msg) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": daemon.leader_election: ", msg));
  };
  if (!IsDnsName(c.lease_name, true, 253)) {
    return bad(absl::StrCat("lease_name \"", c.lease_name,
                            "\" is not a DNS subdomain (lowercase letters, digits, '-', '.')"));
  }
  if (!c.lease_namespace.empty() && !IsDnsName(c.lease_namespace, false, 63)) {
    return bad(absl::StrCat("lease_namespace \"", c.lease_namespace,
                            "\" is not a DNS label (lowercase letters, digits, '-')"));
  }
  if (c.lease_duration_ms <= 0 || c.renew_deadline_ms <= 0 || c.retry_period_ms <= 0) {
    return bad("lease_duration_ms, renew_deadline_ms and retry_period_ms must be > 0");
  }
  if (c.renew_deadline_ms >= c.lease_duration_ms) {
    return bad(absl::StrCat("renew_deadline_ms (", c.renew_deadline_ms,
                            ") must be less than lease_duration_ms (", c.lease_duration_ms,
                            "): a leader must give up before a standby may take over"));
  }
  if (c.retry_period_ms >= c.renew_deadline_ms) {
    return bad(absl::StrCat("retry_period_ms (", c.retry_period_ms,
                            ") must be less than renew_deadline_ms (", c.renew_deadline_ms,
                            "): the leader needs several renewal attempts per deadline"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DaemonConfig> ParseDaemonConfig(const YAML::Node& d, absl::string_view source) {
  DaemonConfig c;
  if (!d.IsDefined() || d.IsNull()) return c;
  if (!d.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, d), ": daemon: expected a mapping"));
  }
  std::set<std::string> keys = DaemonQueueKeys();  // config/queue_config.h reads these
  keys.insert(
      {"http_port", "bind_address", "url_prefix", "filter_verb", "prioritize_verb", "bind_verb",
       "preempt_verb", "gpu_resource", "bind_window_ms", "max_body_bytes", "http_threads",
       "max_connections", "bind_parallelism", "gang_barrier", "scheduler_names", "preemption",
       "preemption_retry_seconds", "nomination_ttl_seconds", "failed_node_memory_seconds",
       "slow_node_gang_gpus", "slow_node_threshold", "slow_node_half_life_seconds",
       "wake_retry_seconds", "queue_pass_ms", "spares", "leader_election", "queue_journal",
       // HttpTransportOptions
       "tls", "idle_timeout_ms", "read_timeout_ms", "write_timeout_ms", "max_inflight_body_bytes",
       "health_port", "grpc"});  // parsed by ParseGrpcConfig (grpc_config.h)
  if (absl::Status s = YamlCheckKeys(d, source, keys, "daemon"); !s.ok()) return s;
  auto port = YamlInt(d, "http_port", source, 1, 65535, c.http.port);
  if (!port.ok()) return port.status();
  c.http.port = static_cast<int>(*port);
  for (auto [key, field] :
       {std::pair{"bind_address", &c.http.bind_address}, std::pair{"url_prefix", &c.http.prefix},
        std::pair{"filter_verb", &c.http.filter_verb},
        std::pair{"prioritize_verb", &c.http.prioritize_verb},
        std::pair{"bind_verb", &c.http.bind_verb}, std::pair{"preempt_verb", &c.http.preempt_verb},
        std::pair{"gpu_resource", &c.extender.gpu_resource}}) {
    auto v = YamlString(d, key, source, *field);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  auto window = YamlInt(d, "bind_window_ms", source, 10, 600000,
                        absl::ToInt64Milliseconds(c.extender.bind_window));
  if (!window.ok()) return window.status();
  c.extender.bind_window = absl::Milliseconds(*window);
  auto body = YamlInt(d, "max_body_bytes", source, 1024, int64_t{1} << 32,
                      static_cast<int64_t>(c.http.max_body_bytes));
  if (!body.ok()) return body.status();
  c.http.max_body_bytes = static_cast<size_t>(*body);
  auto threads = YamlInt(d, "http_threads", source, 0, 64, c.http.threads);
  if (!threads.ok()) return threads.status();
  c.http.threads = static_cast<int>(*threads);
  auto conns = YamlInt(d, "max_connections", source, 1, 1000000, c.http.max_connections);
  if (!conns.ok()) return conns.status();
  c.http.max_connections = static_cast<int>(*conns);
  DaemonQueueConfig queue{c.extender.queue, c.extender.required_tier_max_wait};
  if (absl::Status s = ParseDaemonQueueConfig(d, source, queue); !s.ok()) return s;
  c.extender.queue = queue.queue;
  c.extender.required_tier_max_wait = queue.required_tier_max_wait;
  auto wake = YamlInt(d, "wake_retry_seconds", source, 0, 3600,
                      absl::ToInt64Seconds(c.extender.wake_retry));
  if (!wake.ok()) return wake.status();
  c.extender.wake_retry = absl::Seconds(*wake);
  auto pass = YamlInt(d, "queue_pass_ms", source, 0, 3600000,
                      absl::ToInt64Milliseconds(c.extender.queue_pass));
  if (!pass.ok()) return pass.status();
  c.extender.queue_pass = absl::Milliseconds(*pass);
  auto parallel = YamlInt(d, "bind_parallelism", source, 1, 256, c.extender.bind_parallelism);
  if (!parallel.ok()) return parallel.status();
  c.extender.bind_parallelism = static_cast<int>(*parallel);
  auto barrier = YamlString(d, "gang_barrier", source, std::string("auto"));
  if (!barrier.ok()) return barrier.status();
  if (*barrier != "auto" && *barrier != "topogang") {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, d["gang_barrier"]), ": daemon.gang_barrier: expected auto ",
                     "(kube-scheduler's GangScheduling plugin holds upstream PodGroup gangs) or ",
                     "topogang (topogang's barrier holds every gang), got \"", *barrier, "\""));
  }
  c.extender.gang_barrier = *barrier == "auto" ? GangLedgerOptions::GangBarrier::kAuto
                                               : GangLedgerOptions::GangBarrier::kTopogang;
  auto preempt = YamlBool(d, "preemption", source, c.extender.preemption);
  if (!preempt.ok()) return preempt.status();
  c.extender.preemption = *preempt;
  auto retry = YamlInt(d, "preemption_retry_seconds", source, 1, 86400,
                       absl::ToInt64Seconds(c.extender.preemption_retry));
  if (!retry.ok()) return retry.status();
  c.extender.preemption_retry = absl::Seconds(*retry);
  auto ttl = YamlInt(d, "nomination_ttl_seconds", source, 1, 86400,
                     absl::ToInt64Seconds(c.extender.nomination_ttl));
  if (!ttl.ok()) return ttl.status();
  c.extender.nomination_ttl = absl::Seconds(*ttl);
  auto memory = YamlInt(d, "failed_node_memory_seconds", source, 0, 7 * 86400,
                        absl::ToInt64Seconds(c.extender.failed_node_memory));
  if (!memory.ok()) return memory.status();
  c.extender.failed_node_memory = absl::Seconds(*memory);
  auto slow_gpus =
      YamlInt(d, "slow_node_gang_gpus", source, 0, 1 << 30, c.extender.slow_node_gang_gpus);
  if (!slow_gpus.ok()) return slow_gpus.status();
  c.extender.slow_node_gang_gpus = *slow_gpus;
  auto half_life = YamlInt(d, "slow_node_half_life_seconds", source, 1, 30 * 86400,
                           absl::ToInt64Seconds(c.slowness.half_life));
  if (!half_life.ok()) return half_life.status();
  c.slowness.half_life = absl::Seconds(*half_life);
  auto threshold = YamlDouble(d, "slow_node_threshold", source, 0.01, 1e6, c.slowness.threshold);
  if (!threshold.ok()) return threshold.status();
  c.slowness.threshold = *threshold;
  auto schedulers = YamlStringList(d, "scheduler_names", source);
  if (!schedulers.ok()) return schedulers.status();
  c.extender.scheduler_names = std::move(*schedulers);
  if (absl::Status s = ParseTls(d["tls"], source, c.transport); !s.ok()) return s;
  for (auto [key, field] : {std::pair{"idle_timeout_ms", &c.transport.idle_timeout_ms},
                            std::pair{"read_timeout_ms", &c.transport.read_timeout_ms},
                            std::pair{"write_timeout_ms", &c.transport.write_timeout_ms}}) {
    auto v = YamlInt(d, key, source, 10, 3600000, *field);
    if (!v.ok()) return v.status();
    *field = static_cast<int>(*v);
  }
  auto inflight = YamlInt(d, "max_inflight_body_bytes", source, 1024, int64_t{1} << 40,
                          static_cast<int64_t>(c.transport.max_inflight_body_bytes));
  if (!inflight.ok()) return inflight.status();
  c.transport.max_inflight_body_bytes = static_cast<size_t>(*inflight);
  if (c.transport.max_inflight_body_bytes < c.http.max_body_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, d), ": daemon: max_inflight_body_bytes (",
                     c.transport.max_inflight_body_bytes, ") must be at least max_body_bytes (",
                     c.http.max_body_bytes, "): the largest request allowed must fit"));
  }
  if (d["health_port"].IsDefined() && !d["health_port"].IsNull()) {
    auto hp = YamlInt(d, "health_port", source, 1, 65535, std::nullopt);
    if (!hp.ok()) return hp.status();
    if (*hp == c.http.port) {
      return absl::InvalidArgumentError(absl::StrCat(
          YamlWhere(source, d["health_port"]), ": daemon: health_port must differ from http_port"));
    }
    c.transport.health_port = static_cast<int>(*hp);
  }
  if (absl::Status s = ParseSpares(d["spares"], source, c.spares); !s.ok()) return s;
  auto le = ParseLeaderElection(d["leader_election"], source);
  if (!le.ok()) return le.status();
  c.leader_election = *le;
  auto qj = ParseQueueJournal(d["queue_journal"], source);
  if (!qj.ok()) return qj.status();
  c.queue_journal = *qj;
  if (c.extender.gpu_resource.empty() || c.http.filter_verb.empty() || c.http.bind_verb.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": daemon: verbs and gpu_resource must not be empty"));
  }
  return c;
}

}  // namespace topogang
