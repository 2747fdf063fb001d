// libFuzzer target for the daemon's own config sections: `daemon:` (extender transport and TLS,
// limits, leader election; topogangd/daemon_config.h) and `daemon.grpc:` (TLS, tokens,
// token_review, access_review, heartbeats; api/grpc_config.h), read from any YAML. Bad input must
// come back as an error, never a crash; what parses must hold the parsers' own invariants.
//   bash scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/grpc_config.h"
#include "common/yaml_util.h"
#include "topogangd/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace topogang;
  if (size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto root = YamlParse(text, "fuzz.yaml");
  if (!root.ok() || !root->IsMap()) return 0;
  const YAML::Node daemon = (*root)["daemon"];
  auto d = ParseDaemonConfig(daemon, "fuzz.yaml");
  if (d.ok()) {
    // The TLS files go together (checked at parse time, used by the server at start).
    if (d->transport.tls.cert_file.empty() != d->transport.tls.key_file.empty()) std::abort();
  }
  auto g = ParseGrpcConfig(daemon.IsMap() ? daemon["grpc"] : YAML::Node(), "fuzz.yaml");
  if (g.ok()) {
    if (g->heartbeat_window < g->heartbeat_interval) std::abort();
    if (g->token_review.enabled && g->token_review.agent_usernames.empty()) std::abort();
    if (g->access_review.enabled && !g->token_review.enabled) std::abort();
    for (const std::string& u : g->token_review.agent_usernames) {
      if (u.rfind("system:serviceaccount:", 0) != 0) std::abort();
    }
  }
  return 0;
}
