#include "api/grpc_config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/yaml_util.h"

namespace topogang {

namespace {

absl::Status Bad(absl::string_view source, const YAML::Node& at, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, at), ": ", what));
}

// A DNS-1123 label (namespaces) or subdomain (ServiceAccount names), as the API server checks.
bool DnsName(absl::string_view s, size_t max, bool dots) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || (dots && c == '.'))) {
      return false;
    }
  }
  return absl::ascii_isalnum(s.front()) && absl::ascii_isalnum(s.back());
}

// "NAMESPACE/NAME" (or the username itself) -> "system:serviceaccount:NAMESPACE:NAME", the
// username TokenReview reports for a ServiceAccount token (k8s.io/apiserver
// pkg/authentication/serviceaccount/util.go, MakeUsername).
absl::StatusOr<std::string> ServiceAccountUsername(absl::string_view v) {
  absl::string_view ns, name;
  std::vector<absl::string_view> colon = absl::StrSplit(v, ':');
  std::vector<absl::string_view> slash = absl::StrSplit(v, '/');
  if (colon.size() == 4 && colon[0] == "system" && colon[1] == "serviceaccount") {
    ns = colon[2];
    name = colon[3];
  } else if (slash.size() == 2) {
    ns = slash[0];
    name = slash[1];
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("'", v, "' is not NAMESPACE/NAME or system:serviceaccount:NAMESPACE:NAME"));
  }
  if (!DnsName(ns, 63, false) || !DnsName(name, 253, true)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", v, "': namespace or service account name is not a DNS name"));
  }
  return absl::StrCat("system:serviceaccount:", ns, ":", name);
}

absl::Status ParseTokenReview(const YAML::Node& t, absl::string_view source,
                              TokenReviewOptions* o) {
  if (!t.IsMap()) return Bad(source, t, "token_review must be a map");
  if (absl::Status s =
          YamlCheckKeys(t, source,
                        {"enabled", "audiences", "agent_service_accounts", "cache_ttl_seconds",
                         "negative_cache_ttl_seconds", "timeout_ms", "workers"},
                        "daemon.grpc.token_review");
      !s.ok()) {
    return s;
  }
  auto enabled = YamlBool(t, "enabled", source, true);
  auto audiences = YamlStringList(t, "audiences", source);
  auto accounts = YamlStringList(t, "agent_service_accounts", source);
  auto ttl = YamlInt(t, "cache_ttl_seconds", source, 0, 3600, 10);
  auto negative = YamlInt(t, "negative_cache_ttl_seconds", source, 0, 3600, 10);
  auto timeout = YamlInt(t, "timeout_ms", source, 100, 60000, 5000);
  auto workers = YamlInt(t, "workers", source, 1, 64, 4);
  for (const absl::Status& s :
       {enabled.status(), audiences.status(), accounts.status(), ttl.status(), negative.status(),
        timeout.status(), workers.status()}) {
    if (!s.ok()) return s;
  }
  o->enabled = *enabled;
  if (!audiences->empty()) o->audiences = *audiences;
  if (o->enabled && accounts->empty()) {
    return Bad(source, t,
               "token_review: agent_service_accounts must name the agents' ServiceAccount "
               "(e.g. [topogang-system/topogang-agent])");
  }
  for (const std::string& a : *accounts) {
    auto u = ServiceAccountUsername(a);
    if (!u.ok()) return Bad(source, t["agent_service_accounts"], u.status().message());
    o->agent_usernames.insert(*u);
  }
  o->cache_ttl = absl::Seconds(*ttl);
  o->negative_cache_ttl = absl::Seconds(*negative);
  o->timeout = absl::Milliseconds(*timeout);
  o->workers = static_cast<int>(*workers);
  return absl::OkStatus();
}

absl::Status ParseAccessReview(const YAML::Node& a, absl::string_view source,
                               AccessReviewOptions* o) {
  if (!a.IsMap()) return Bad(source, a, "access_review must be a map");
  if (absl::Status s =
          YamlCheckKeys(a, source, {"enabled", "cache_ttl_seconds", "negative_cache_ttl_seconds"},
                        "daemon.grpc.access_review");
      !s.ok()) {
    return s;
  }
  auto enabled = YamlBool(a, "enabled", source, true);
  auto ttl = YamlInt(a, "cache_ttl_seconds", source, 0, 3600, 10);
  auto negative = YamlInt(a, "negative_cache_ttl_seconds", source, 0, 3600, 10);
  for (const absl::Status& s : {enabled.status(), ttl.status(), negative.status()}) {
    if (!s.ok()) return s;
  }
  o->enabled = *enabled;
  o->cache_ttl = absl::Seconds(*ttl);
  o->negative_cache_ttl = absl::Seconds(*negative);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GrpcServerOptions> ParseGrpcConfig(const YAML::Node& g, absl::string_view source) {
  GrpcServerOptions o;
  o.address = "0.0.0.0:9090";
  if (!g.IsDefined() || g.IsNull()) return o;
  if (!g.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, g), ": grpc must be a map"));
  }
  if (absl::Status s = YamlCheckKeys(
          g, source,
          {"address", "tls", "token_file", "allow_unauthenticated_agents",
           "allow_unauthenticated_admin", "token_review", "access_review", "datagram_port",
           "datagram_batch_ms", "max_connection_idle_seconds", "heartbeat_interval_seconds",
           "heartbeat_window_seconds", "monitor_period_ms", "max_receive_bytes", "fatal_xids"},
          "daemon.grpc");
      !s.ok()) {
    return s;
  }
  auto address = YamlString(g, "address", source, o.address);
  auto token_file = YamlString(g, "token_file", source, std::string());
  auto anon = YamlBool(g, "allow_unauthenticated_agents", source, false);
  auto anon_admin = YamlBool(g, "allow_unauthenticated_admin", source, false);
  auto dgram_port = YamlInt(g, "datagram_port", source, -1, 65535, 0);
  auto dgram_batch = YamlInt(g, "datagram_batch_ms", source, 0, 1000, 50);
  auto idle = YamlInt(g, "max_connection_idle_seconds", source, 0, 86400, 300);
  auto interval = YamlInt(g, "heartbeat_interval_seconds", source, 1, 3600, 10);
  auto window = YamlInt(g, "heartbeat_window_seconds", source, 1, 86400, 30);
  auto period = YamlInt(g, "monitor_period_ms", source, 0, 600000, 0);
  auto max_recv = YamlInt(g, "max_receive_bytes", source, 1024, 1 << 30, 1 << 20);
  for (const absl::Status& s :
       {address.status(), token_file.status(), anon.status(), anon_admin.status(),
        dgram_port.status(), dgram_batch.status(), idle.status(), interval.status(),
        window.status(), period.status(), max_recv.status()}) {
    if (!s.ok()) return s;
  }
  if (*window < *interval) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, g), ": heartbeat_window_seconds (", *window,
                     ") must be at least heartbeat_interval_seconds (", *interval, ")"));
  }
  o.address = *address;
  o.token_file = *token_file;
  o.allow_unauthenticated_agents = *anon;
  o.allow_unauthenticated_admin = *anon_admin;
  o.datagram_port = static_cast<int>(*dgram_port);
  o.datagram_batch = absl::Milliseconds(*dgram_batch);
  o.max_connection_idle = absl::Seconds(*idle);
  if (const YAML::Node t = g["token_review"]; t.IsDefined() && !t.IsNull()) {
    if (absl::Status s = ParseTokenReview(t, source, &o.token_review); !s.ok()) return s;
  }
  if (const YAML::Node a = g["access_review"]; a.IsDefined() && !a.IsNull()) {
    if (absl::Status s = ParseAccessReview(a, source, &o.access_review); !s.ok()) return s;
    if (o.access_review.enabled && !o.token_review.enabled) {
      return Bad(source, a,
                 "access_review needs token_review (callers are identified by their token)");
    }
  }
  o.heartbeat_interval = absl::Seconds(*interval);
  o.heartbeat_window = absl::Seconds(*window);
  o.monitor_period = absl::Milliseconds(*period);
  o.max_receive_bytes = static_cast<int>(*max_recv);
  if (const YAML::Node tls = g["tls"]; tls.IsDefined() && !tls.IsNull()) {
    if (!tls.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(YamlWhere(source, tls), ": tls must be a map"));
    }
    if (absl::Status s = YamlCheckKeys(
            tls, source, {"cert", "key", "client_ca", "require_client_cert"}, "daemon.grpc.tls");
        !s.ok()) {
      return s;
    }
    auto cert = YamlString(tls, "cert", source, std::string());
    auto key = YamlString(tls, "key", source, std::string());
    auto ca = YamlString(tls, "client_ca", source, std::string());
    auto require = YamlBool(tls, "require_client_cert", source, true);
    for (const absl::Status& s : {cert.status(), key.status(), ca.status(), require.status()}) {
      if (!s.ok()) return s;
    }
    o.tls = {*cert, *key, *ca, *require};
  }
  if (const YAML::Node x = g["fatal_xids"]; x.IsDefined() && !x.IsNull()) {
    if (!x.IsSequence() || x.size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(YamlWhere(source, x), ": fatal_xids must be a non-empty list of XID codes"));
    }
    for (const YAML::Node& v : x) {
      uint32_t code = 0;
      if (!v.IsScalar() || !YAML::convert<uint32_t>::decode(v, code) || code == 0 ||
          code > 100000) {
        return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, v), ": fatal_xids: '",
                                                       v.IsScalar() ? v.Scalar() : "?",
                                                       "' is not an XID code"));
      }
      o.fatal_xids.insert(code);
    }
  }
  return o;
}

}  // namespace topogang
