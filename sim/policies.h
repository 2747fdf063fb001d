// Factories of the individual policies (one file each); see policy.h for MakePolicy.
#pragma once

#include <memory>

#include "sim/gang_policy.h"
#include "sim/policy.h"

namespace topogang::sim {

std::unique_ptr<Policy> MakeDefaultPolicy(const Cluster& c, PolicyContext ctx);
std::unique_ptr<Policy> MakeFirstFitPolicy(const Cluster& c, PolicyContext ctx);
std::unique_ptr<Policy> MakeKueueTasPolicy(const Cluster& c, PolicyContext ctx, bool best);
std::unique_ptr<Policy> MakeSlurmTreePolicy(const Cluster& c, PolicyContext ctx, bool best);
std::unique_ptr<Policy> MakeVolcanoPolicy(const Cluster& c, PolicyContext ctx, bool best);
std::unique_ptr<Policy> MakeTopogangPolicy(const Cluster& c, PolicyContext ctx);
std::unique_ptr<Policy> MakeTopogangEasyPolicy(const Cluster& c, PolicyContext ctx);

}  // namespace topogang::sim
