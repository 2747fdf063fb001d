#include "scheduler/elastic.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/planner.h"

namespace topogang {

absl::StatusOr<const GangRecord*> ElasticGangs::Start(GangScheduler& sched, const GangSpec& gang,
                                                      int min_members, int max_members,
                                                      absl::Time now) {
  if (min_members < 1 || max_members < min_members || max_members > kMaxGangMembers) {
    return absl::InvalidArgumentError(absl::StrCat("gang '", gang.name, "': elastic size ",
                                                   min_members, "..", max_members, " is invalid"));
  }
  if (gang.slice.members > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gang '", gang.name, "': elastic gangs with slices are not supported"));
  }
  if (sched.Find(gang.name)) {
    return absl::AlreadyExistsError(absl::StrCat("gang '", gang.name, "' already holds GPUs"));
  }
  const Planner planner = sched.planner();
  GangSpec spec = gang;
  spec.members = min_members;
  auto base = planner.Plan(spec);
  if (!base.ok()) return base.status();
  // The start tier: where the minimum fits, but never a single node (a gang whose minimum fits on
  // one node may still grow inside the node's leaf or NVLink domain).
  const Cluster& c = sched.cluster();
  const int level = std::max(0, std::min(base->level, c.node_level() - 1));
  // The largest size that still fits at that tier (fitting there is monotone in size).
  GangSpec at_tier = spec;
  at_tier.required_tier = level == 0 ? std::string() : c.LevelName(level);
  Placement best = *base;
  int lo = min_members + 1, hi = max_members;
  while (lo <= hi) {
    const int mid = lo + (hi - lo) / 2;
    at_tier.members = mid;
    auto p = planner.Plan(at_tier);
    if (p.ok()) {
      best = *std::move(p);
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  best.members.resize(min_members);
  if (absl::Status s = sched.Adopt(spec, std::move(best), GangState::kReserved, now); !s.ok()) {
    return s;
  }
  const GangRecord* rec = sched.Find(gang.name);
  const int domain = c.AncestorAt(c.NodeDomain(rec->placement.members[0].node), level);
  gangs_[gang.name] = Elastic{min_members, max_members, level, domain};
  return rec;
}

absl::StatusOr<ElasticGangs::Offer> ElasticGangs::GrowthOffer(const GangScheduler& sched,
                                                              absl::string_view name) const {
  auto it = gangs_.find(name);
  const GangRecord* rec = sched.Find(name);
  if (it == gangs_.end() || !rec) {
    return absl::NotFoundError(absl::StrCat("no elastic gang '", name, "'"));
  }
  const Elastic& e = it->second;
  const Cluster& c = sched.cluster();
  std::vector<int> anchors;
  int current = 0;
  for (const MemberPlacement& m : rec->placement.members) {
    if (m.node >= 0) anchors.push_back(m.node), ++current;
  }
  Offer offer;
  offer.domain = e.start_domain;
  const int want = e.max_members - current;
  if (want <= 0 || anchors.empty()) return offer;
  const int sku = rec->spec.allow_mixed_sku ? kAnySku : c.node(anchors[0]).sku;
  const int room = c.MemberCapacity(e.start_domain, sku, rec->spec.gpus_per_member);
  const int count = std::min(want, room);
  if (count <= 0) return offer;
  GangSpec within = rec->spec;
  within.required_tier = e.start_level == 0 ? std::string() : c.LevelName(e.start_level);
  auto near = sched.planner().PlanNear(within, count, anchors);
  if (!near.ok()) return near.status();  // unreachable without slices: the capacity was counted
  offer.members = *std::move(near);
  return offer;
}

absl::Status ElasticGangs::Grow(GangScheduler& sched, absl::string_view name,
                                const std::vector<MemberPlacement>& members) {
  auto it = gangs_.find(name);
  const GangRecord* rec = sched.Find(name);
  if (it == gangs_.end() || !rec) {
    return absl::NotFoundError(absl::StrCat("no elastic gang '", name, "'"));
  }
  const Cluster& c = sched.cluster();
  const int size = static_cast<int>(rec->placement.members.size());
  if (size + static_cast<int>(members.size()) > it->second.max_members) {
    return absl::InvalidArgumentError(absl::StrCat("gang '", name, "' would exceed its maximum of ",
                                                   it->second.max_members, " members"));
  }
  for (const MemberPlacement& m : members) {
    if (m.node < 0 || m.node >= c.num_nodes() ||
        c.AncestorAt(c.NodeDomain(m.node), it->second.start_level) != it->second.start_domain) {
      return absl::InvalidArgumentError(absl::StrCat("gang '", name, "' grows only inside ",
                                                     c.DomainPath(it->second.start_domain)));
    }
  }
  for (size_t i = 0; i < members.size(); ++i) {
    absl::Status s = sched.AdoptMember(name, size + static_cast<int>(i), members[i]);
    if (!s.ok()) {
      for (size_t j = 0; j < i; ++j) (void)sched.ReleaseMember(name, size + static_cast<int>(j));
      return s;
    }
  }
  return absl::OkStatus();
}

bool ElasticGangs::SetMaxMembers(absl::string_view gang, int max_members) {
  auto it = gangs_.find(gang);
  if (it == gangs_.end()) return false;
  it->second.max_members = std::clamp(max_members, it->second.min_members, kMaxGangMembers);
  return true;
}

int ElasticGangs::start_level(absl::string_view gang) const {
  auto it = gangs_.find(gang);
  return it == gangs_.end() ? -1 : it->second.start_level;
}

}  // namespace topogang
