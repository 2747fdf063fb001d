#include "sim/policy.h"

#include "sim/policies.h"

namespace topogang::sim {

std::vector<std::string> PolicyNames() {
  return {"default",    "gang-firstfit",   "kueue-tas",         "kueue-tas-best",
          "slurm-tree", "slurm-tree-best", "volcano-hypernode", "volcano-hypernode-best",
          "topogang"};
}

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name, const Cluster& c,
                                                   PolicyContext ctx) {
  if (name == "default") return MakeDefaultPolicy(c, std::move(ctx));
  if (name == "gang-firstfit") return MakeFirstFitPolicy(c, std::move(ctx));
  if (name == "kueue-tas") return MakeKueueTasPolicy(c, std::move(ctx), false);
  if (name == "kueue-tas-best") return MakeKueueTasPolicy(c, std::move(ctx), true);
  if (name == "slurm-tree") return MakeSlurmTreePolicy(c, std::move(ctx), false);
  if (name == "slurm-tree-best") return MakeSlurmTreePolicy(c, std::move(ctx), true);
  if (name == "volcano-hypernode") return MakeVolcanoPolicy(c, std::move(ctx), false);
  if (name == "volcano-hypernode-best") return MakeVolcanoPolicy(c, std::move(ctx), true);
  if (name == "topogang") return MakeTopogangPolicy(c, std::move(ctx));
  if (name == "topogang-easy") return MakeTopogangEasyPolicy(c, std::move(ctx));
  std::string known;
  for (const auto& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
  known += ", topogang-easy";
  return absl::InvalidArgumentError("unknown policy '" + name + "' (known: " + known + ")");
}

}  // namespace topogang::sim
