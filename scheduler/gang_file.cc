#include "scheduler/gang_file.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/yaml_util.h"

namespace topogang {

absl::StatusOr<GangSpec> ParseGangYaml(const YAML::Node& n, absl::string_view source,
                                       absl::string_view ctx) {
  if (absl::Status s =
          YamlCheckKeys(n, source,
                        {"name", "members", "gpus_per_member", "sku", "allow_mixed_sku",
                         "required_tier", "preferred_tier", "slice", "priority", "count"},
                        ctx);
      !s.ok()) {
    return s;
  }
  GangSpec g;
  auto name = YamlString(n, "name", source, std::nullopt);
  auto members = YamlInt(n, "members", source, 1, kMaxGangMembers, 1);
  auto gpm = YamlInt(n, "gpus_per_member", source, 1, 128, 1);
  auto sku = YamlString(n, "sku", source, std::string());
  auto mixed = YamlBool(n, "allow_mixed_sku", source, false);
  auto req = YamlString(n, "required_tier", source, std::string());
  auto pref = YamlString(n, "preferred_tier", source, std::string());
  auto prio = YamlInt(n, "priority", source, -1000000, 1000000, 0);
  for (const absl::Status& s : {name.status(), members.status(), gpm.status(), sku.status(),
                                mixed.status(), req.status(), pref.status(), prio.status()}) {
    if (!s.ok()) return s;
  }
  if (name->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlWhere(source, n), ": ", ctx, ".name: must be non-empty"));
  }
  g.name = *name;
  g.members = static_cast<int>(*members);
  g.gpus_per_member = static_cast<int>(*gpm);
  g.sku = *sku;
  g.allow_mixed_sku = *mixed;
  g.required_tier = *req;
  g.preferred_tier = *pref;
  g.priority = static_cast<int>(*prio);
  if (YAML::Node s = n["slice"]; s.IsDefined() && !s.IsNull()) {
    if (absl::Status st =
            YamlCheckKeys(s, source, {"members", "tier"}, absl::StrCat(ctx, ".slice"));
        !st.ok()) {
      return st;
    }
    auto sm = YamlInt(s, "members", source, 1, kMaxGangMembers, std::nullopt);
    auto st = YamlString(s, "tier", source, std::nullopt);
    if (!sm.ok()) return sm.status();
    if (!st.ok()) return st.status();
    g.slice.members = static_cast<int>(*sm);
    g.slice.tier = *st;
  }
  if (absl::Status s = ValidateGang(g); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, n), ": ", s.message()));
  }
  return g;
}

absl::StatusOr<std::vector<GangSpec>> ParseJobsFile(absl::string_view text,
                                                    absl::string_view source) {
  auto root = YamlParse(text, source);
  if (!root.ok()) return root.status();
  if (absl::Status s = YamlCheckKeys(*root, source, {"jobs"}, "jobs file"); !s.ok()) return s;
  YAML::Node jobs = (*root)["jobs"];
  if (!jobs.IsSequence()) {
    return absl::InvalidArgumentError(absl::StrCat(
        YamlWhere(source, jobs.IsDefined() ? jobs : *root), ": jobs: expected a list of gangs"));
  }
  std::vector<GangSpec> out;
  absl::flat_hash_set<std::string> names;
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::string ctx = absl::StrCat("jobs[", i, "]");
    auto g = ParseGangYaml(jobs[i], source, ctx);
    if (!g.ok()) return g.status();
    auto count = YamlInt(jobs[i], "count", source, 1, 100000, 1);
    if (!count.ok()) return count.status();
    if (out.size() + *count > 1000000) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": more than 1000000 jobs"));
    }
    for (int64_t k = 0; k < *count; ++k) {
      GangSpec copy = *g;
      if (*count > 1) copy.name = absl::StrCat(g->name, "-", k + 1);
      if (!names.insert(copy.name).second) {
        return absl::InvalidArgumentError(absl::StrCat(YamlWhere(source, jobs[i]), ": ", ctx,
                                                       ": duplicate job name '", copy.name, "'"));
      }
      out.push_back(std::move(copy));
    }
  }
  return out;
}

}  // namespace topogang
