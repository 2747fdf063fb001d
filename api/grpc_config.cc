#include "api/grpc_config.h"

#include "absl/strings/str_cat.h"
#include "common/yaml_util.h"

namespace topogang {

absl::StatusOr<GrpcServerOptions> ParseGrpcConfig(const YAML::Node& g, absl::string_view source) {
  GrpcServerOptions o;
  o.address = "0.0.0.0:9090";
  if (!g.IsDefined() || g.IsNull()) return o;
  if (!g.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, g), ": grpc must be a map"));
  }
  if (absl::Status s =
          YamlCheckKeys(g, source,
                        {"address", "tls", "token_file", "allow_unauthenticated_agents",
                         "heartbeat_interval_seconds", "heartbeat_window_seconds",
                         "monitor_period_ms", "max_receive_bytes", "fatal_xids"},
                        "daemon.grpc");
      !s.ok()) {
    return s;
  }
  auto address = YamlString(g, "address", source, o.address);
  auto token_file = YamlString(g, "token_file", source, std::string());
  auto anon = YamlBool(g, "allow_unauthenticated_agents", source, false);
  auto interval = YamlInt(g, "heartbeat_interval_seconds", source, 1, 3600, 10);
  auto window = YamlInt(g, "heartbeat_window_seconds", source, 1, 86400, 30);
  auto period = YamlInt(g, "monitor_period_ms", source, 0, 600000, 0);
  auto max_recv = YamlInt(g, "max_receive_bytes", source, 1024, 1 << 30, 1 << 20);
  for (const absl::Status& s :
       {address.status(), token_file.status(), anon.status(), interval.status(), window.status(),
        period.status(), max_recv.status()}) {
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
