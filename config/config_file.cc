#include "config/config_file.h"

#include "absl/strings/str_cat.h"
#include "common/yaml_util.h"

namespace topogang {

absl::StatusOr<TopogangConfig> ParseConfigFile(absl::string_view text, absl::string_view source) {
  auto root = YamlParse(text, source);
  if (!root.ok()) return root.status();
  TopogangConfig cfg;
  if (root->IsNull()) return cfg;  // empty file: all defaults
  if (absl::Status s = YamlCheckKeys(*root, source, {"topology", "scheduler", "daemon"}, "config");
      !s.ok()) {
    return s;
  }
  if (YAML::Node t = (*root)["topology"]; t.IsDefined() && !t.IsNull()) {
    auto topo = ParseTopologyConfig(t, source);
    if (!topo.ok()) return topo.status();
    cfg.topology = *topo;
  }
  if (YAML::Node s = (*root)["scheduler"]; s.IsDefined() && !s.IsNull()) {
    if (absl::Status st = YamlCheckKeys(
            s, source, {"reservation_ttl_seconds", "auto_apply_replacements"}, "scheduler");
        !st.ok()) {
      return st;
    }
    auto ttl = YamlDouble(s, "reservation_ttl_seconds", source, 0.001, 86400, 30.0);
    if (!ttl.ok()) return ttl.status();
    auto apply = YamlBool(s, "auto_apply_replacements", source, false);
    if (!apply.ok()) return apply.status();
    cfg.scheduler.reservation_ttl = absl::Seconds(*ttl);
    cfg.scheduler.auto_apply_replacements = *apply;
  }
  cfg.daemon = (*root)["daemon"];
  return cfg;
}

}  // namespace topogang
