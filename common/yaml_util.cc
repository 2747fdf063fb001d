#include "common/yaml_util.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace topogang {
namespace {

absl::Status Bad(absl::string_view source, const YAML::Node& n, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, n), ": ", msg));
}

// Returns the value node for key, or an undefined node. Never throws on non-maps.
YAML::Node Lookup(const YAML::Node& map, absl::string_view key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& kv : map) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

}  // namespace

std::string YamlWhere(absl::string_view source, const YAML::Node& node) {
  if (!node.IsDefined()) return std::string(source);
  YAML::Mark m = node.Mark();
  if (m.line < 0) return std::string(source);
  return absl::StrCat(source, ":", m.line + 1, ":", m.column + 1);
}

absl::StatusOr<YAML::Node> YamlParse(absl::string_view text, absl::string_view source) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": invalid YAML: ", e.msg));
  }
}

absl::Status YamlCheckKeys(const YAML::Node& map, absl::string_view source,
                           const std::set<std::string>& allowed, absl::string_view context) {
  if (!map.IsMap()) return Bad(source, map, absl::StrCat(context, ": expected a mapping"));
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) return Bad(source, kv.first, absl::StrCat(context, ": bad key"));
    if (!allowed.count(kv.first.Scalar())) {
      return Bad(source, kv.first,
                 absl::StrCat(context, ": unknown key '", kv.first.Scalar(),
                              "' (expected one of: ", absl::StrJoin(allowed, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> YamlInt(const YAML::Node& map, absl::string_view key,
                                absl::string_view source, int64_t min, int64_t max,
                                std::optional<int64_t> default_value) {
  YAML::Node n = Lookup(map, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (default_value) return *default_value;
    return Bad(source, map, absl::StrCat("missing required key '", key, "'"));
  }
  int64_t v = 0;
  if (!n.IsScalar() || !absl::SimpleAtoi(n.Scalar(), &v)) {
    return Bad(source, n, absl::StrCat(key, ": expected an integer"));
  }
  if (v < min || v > max) {
    return Bad(source, n, absl::StrCat(key, ": must be between ", min, " and ", max, ", got ", v));
  }
  return v;
}

absl::StatusOr<double> YamlDouble(const YAML::Node& map, absl::string_view key,
                                  absl::string_view source, double min, double max,
                                  std::optional<double> default_value) {
  YAML::Node n = Lookup(map, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (default_value) return *default_value;
    return Bad(source, map, absl::StrCat("missing required key '", key, "'"));
  }
  double v = 0;
  if (!n.IsScalar() || !absl::SimpleAtod(n.Scalar(), &v) || !std::isfinite(v)) {
    return Bad(source, n, absl::StrCat(key, ": expected a number"));
  }
  if (v < min || v > max) {
    return Bad(source, n, absl::StrCat(key, ": must be between ", min, " and ", max, ", got ", v));
  }
  return v;
}

absl::StatusOr<std::string> YamlString(const YAML::Node& map, absl::string_view key,
                                       absl::string_view source,
                                       std::optional<std::string> default_value) {
  YAML::Node n = Lookup(map, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (default_value) return *default_value;
    return Bad(source, map, absl::StrCat("missing required key '", key, "'"));
  }
  if (!n.IsScalar()) return Bad(source, n, absl::StrCat(key, ": expected a string"));
  return n.Scalar();
}

absl::StatusOr<std::vector<std::string>> YamlStringList(const YAML::Node& map,
                                                        absl::string_view key,
                                                        absl::string_view source) {
  std::vector<std::string> out;
  YAML::Node n = Lookup(map, key);
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!n.IsSequence()) return Bad(source, n, absl::StrCat(key, ": expected a list of strings"));
  for (const YAML::Node& item : n) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      return Bad(source, item, absl::StrCat(key, ": expected a non-empty string"));
    }
    out.push_back(item.Scalar());
  }
  return out;
}

absl::StatusOr<bool> YamlBool(const YAML::Node& map, absl::string_view key,
                              absl::string_view source, bool default_value) {
  YAML::Node n = Lookup(map, key);
  if (!n.IsDefined() || n.IsNull()) return default_value;
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
    return Bad(source, n, absl::StrCat(key, ": expected true or false"));
  }
  return v;
}

}  // namespace topogang
