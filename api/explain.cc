#include "api/explain.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/convert.h"
#include "scheduler/planner.h"

namespace topogang {

namespace {

// Member capacity of a domain under the gang's SKU rules: one named SKU, any single SKU, or
// mixed SKUs.
int Capacity(const Cluster& c, int domain, int sku, bool mixed, int gpm) {
  if (sku != kAnySku || mixed) return c.MemberCapacity(domain, sku, gpm);
  int best = 0;
  for (int s = 0; s < c.num_skus(); ++s) best = std::max(best, c.MemberCapacity(domain, s, gpm));
  return best;
}

}  // namespace

void ExplainGang(const Cluster& c, const GangSpec& gang, int max_rejected,
                 v1::ExplainResponse* out) {
  GangToProto(gang, out->mutable_spec());
  absl::StatusOr<Placement> plan = Planner(c).Plan(gang);
  out->set_would_fit_now(plan.ok());
  if (!plan.ok()) out->set_no_fit_reason(std::string(plan.status().message()));

  int sku = kAnySku;
  if (!gang.sku.empty()) {
    sku = c.FindSku(gang.sku);
    if (sku < 0) return;  // the planner's reason names the unknown SKU
  }
  int required_level = 0;
  if (!gang.required_tier.empty()) {
    required_level = c.LevelByName(gang.required_tier);
    if (required_level < 0) return;  // likewise
  }
  for (int level = c.node_level(); level >= 0; --level) {
    v1::TierExplanation* t = out->add_tiers();
    t->set_tier(c.LevelName(level));
    t->set_level(level);
    t->set_allowed(level >= required_level);
    const int begin = c.LevelBegin(level), end = c.LevelEnd(level);
    t->set_domains(end - begin);
    std::vector<std::pair<int, int>> rejected;  // (capacity, domain)
    int fits = 0, best = -1, best_cap = -1;
    for (int d = begin; d < end; ++d) {
      int cap = Capacity(c, d, sku, gang.allow_mixed_sku, gang.gpus_per_member);
      if (cap > best_cap) best_cap = cap, best = d;
      if (cap >= gang.members) {
        ++fits;
      } else {
        rejected.emplace_back(cap, d);
      }
    }
    t->set_domains_that_fit(fits);
    if (best >= 0) {
      t->set_best_domain(c.DomainPath(best));
      t->set_best_member_capacity(best_cap);
    }
    const size_t keep = std::min<size_t>(rejected.size(), std::max(0, max_rejected));
    std::partial_sort(rejected.begin(), rejected.begin() + keep, rejected.end(),
                      [](auto& a, auto& b) {
                        return a.first != b.first ? a.first > b.first : a.second < b.second;
                      });
    for (size_t i = 0; i < keep; ++i) {
      auto [cap, d] = rejected[i];
      v1::DomainRejection* r = t->add_rejected();
      r->set_domain(c.DomainPath(d));
      r->set_member_capacity(cap);
      int free = c.FreeHealthy(d, sku);
      r->set_free_healthy_gpus(free);
      r->set_reason(absl::StrCat("room for ", cap, " of ", gang.members, " members of ",
                                 gang.gpus_per_member, " GPUs (", free, " free healthy GPUs)"));
    }
    std::string verdict;
    if (!t->allowed()) {
      verdict = absl::StrCat("not allowed: the gang requires one ", gang.required_tier);
    } else if (fits > 0) {
      verdict = absl::StrCat(fits, " of ", end - begin, " ", c.LevelName(level),
                             " domains could hold it; most room: ", t->best_domain(), " (",
                             best_cap, " members)");
    } else {
      verdict = absl::StrCat("no ", c.LevelName(level), " can hold ", gang.members,
                             " members; most room: ", t->best_domain(), " (", best_cap, ")");
    }
    if (gang.slice.members > 0 && fits > 0) {
      absl::StrAppend(&verdict, "; slices of ", gang.slice.members, " on one ", gang.slice.tier,
                      " are checked by the planner");
    }
    t->set_verdict(verdict);
  }
}

}  // namespace topogang
