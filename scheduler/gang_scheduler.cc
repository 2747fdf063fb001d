#include "scheduler/gang_scheduler.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "scheduler/replacement.h"

namespace topogang {

uint64_t GangScheduler::NextVersion() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

const char* GangStateName(GangState s) {
  switch (s) {
    case GangState::kReserved:
      return "reserved";
    case GangState::kRunning:
      return "running";
    case GangState::kHeld:
      return "held";
  }
  return "?";
}

const char* ReplanKindName(ReplanEvent::Kind k) {
  switch (k) {
    case ReplanEvent::Kind::kReplanned:
      return "replanned";
    case ReplanEvent::Kind::kDropped:
      return "dropped";
    case ReplanEvent::Kind::kReplacementProposed:
      return "replacement-proposed";
    case ReplanEvent::Kind::kReplacementApplied:
      return "replacement-applied";
    case ReplanEvent::Kind::kReplacementImpossible:
      return "replacement-impossible";
  }
  return "?";
}

GangScheduler::GangScheduler(Cluster cluster, SchedulerOptions options)
    : cluster_(std::move(cluster)), options_(options) {}

absl::StatusOr<const GangRecord*> GangScheduler::Reserve(const GangSpec& gang, absl::Time now) {
  if (gangs_.count(gang.name)) {
    return absl::AlreadyExistsError(absl::StrCat("gang '", gang.name, "' already holds GPUs"));
  }
  auto placement = planner().Plan(gang);
  if (!placement.ok()) return placement.status();
  if (absl::Status s = Adopt(gang, std::move(*placement), GangState::kReserved, now); !s.ok()) {
    return s;
  }
  return &gangs_.find(gang.name)->second;
}

absl::Status GangScheduler::Adopt(const GangSpec& gang, Placement placement, GangState state,
                                  absl::Time now, bool require_healthy) {
  Changed();
  if (gangs_.count(gang.name)) {
    return absl::AlreadyExistsError(absl::StrCat("gang '", gang.name, "' already holds GPUs"));
  }
  std::vector<int> gpus = placement.Gpus();
  if (absl::Status s = cluster_.Allocate(gpus, require_healthy); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("gang '", gang.name, "': ", s.message()));
  }
  SummarizePlacement(cluster_, &placement);
  GangRecord rec{gang, std::move(placement), state, now, now + options_.reservation_ttl, "", {}};
  if (state == GangState::kReserved) expiry_.push({rec.expires_at, gang.name});
  gangs_.emplace(gang.name, std::move(rec));
  return absl::OkStatus();
}

absl::Status GangScheduler::AdoptMember(absl::string_view name, int member,
                                        MemberPlacement placement, bool require_healthy) {
  Changed();
  auto it = gangs_.find(name);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang '", name, "'"));
  Placement& p = it->second.placement;
  const int size = static_cast<int>(p.members.size());
  if (member < 0 || member > size) {
    return absl::InvalidArgumentError(
        absl::StrCat("gang '", name, "': member ", member, " out of range (", size, " members)"));
  }
  if (member < size && (p.members[member].node >= 0 || !p.members[member].gpus.empty())) {
    return absl::AlreadyExistsError(
        absl::StrCat("gang '", name, "': member ", member, " already holds GPUs"));
  }
  if (placement.node < 0 || placement.node >= cluster_.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat("gang '", name, "': bad node"));
  }
  if (absl::Status s = cluster_.Allocate(placement.gpus, require_healthy); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("gang '", name, "': ", s.message()));
  }
  if (member == size) {
    p.members.push_back(std::move(placement));
  } else {
    p.members[member] = std::move(placement);
  }
  SummarizePlacement(cluster_, &p);
  return absl::OkStatus();
}

absl::Status GangScheduler::ReleaseMember(absl::string_view name, int member) {
  Changed();
  auto it = gangs_.find(name);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang '", name, "'"));
  Placement& p = it->second.placement;
  if (member < 0 || member >= static_cast<int>(p.members.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("gang '", name, "': member ", member, " out of range"));
  }
  MemberPlacement& m = p.members[member];
  if (absl::Status s = cluster_.Release(m.gpus); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("releasing member ", member, " of gang '", name, "': ", s.message()));
  }
  m.node = -1;
  m.gpus.clear();
  SummarizePlacement(cluster_, &p);
  return absl::OkStatus();
}

absl::Status GangScheduler::MarkSlowerSinceRepair(absl::string_view name, std::string why,
                                                  Placement ran_before) {
  auto it = gangs_.find(name);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang '", name, "'"));
  if (it->second.slower_since_repair.empty()) {
    it->second.ran_before_slower = std::move(ran_before);
  }
  it->second.slower_since_repair = std::move(why);
  return absl::OkStatus();
}

absl::Status GangScheduler::ClearSlowerSinceRepair(absl::string_view name) {
  auto it = gangs_.find(name);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang '", name, "'"));
  it->second.slower_since_repair.clear();
  it->second.ran_before_slower = Placement{};
  return absl::OkStatus();
}

absl::Status GangScheduler::Commit(absl::string_view name) {
  Changed();
  auto it = gangs_.find(name);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang '", name, "'"));
  it->second.state = GangState::kRunning;
  return absl::OkStatus();
}

absl::Status GangScheduler::Release(absl::string_view name) {
  Changed();
  auto it = gangs_.find(name);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang '", name, "'"));
  if (absl::Status s = cluster_.Release(it->second.placement.Gpus()); !s.ok()) {
    return absl::InternalError(absl::StrCat("releasing gang '", name, "': ", s.message()));
  }
  gangs_.erase(it);
  return absl::OkStatus();
}

absl::Status GangScheduler::Touch(absl::string_view gang, absl::Time now) {
  auto it = gangs_.find(gang);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang ", gang));
  if (it->second.state != GangState::kReserved) return absl::OkStatus();
  it->second.expires_at = now + options_.reservation_ttl;
  expiry_.emplace(it->second.expires_at, it->second.spec.name);
  return absl::OkStatus();
}

std::vector<int> GangScheduler::MaskNodes(const std::vector<int>& nodes) {
  std::vector<int> masked;
  for (int n : nodes) {
    if (n < 0 || n >= cluster_.num_nodes() || cluster_.NodeCordoned(n)) continue;
    cluster_.SetNodeCordoned(n, true);
    masked.push_back(n);
  }
  if (!masked.empty()) HealthChanged();
  return masked;
}

void GangScheduler::UnmaskNodes(const std::vector<int>& masked) {
  for (int n : masked) cluster_.SetNodeCordoned(n, false);
  if (!masked.empty()) HealthChanged();
}

std::vector<std::string> GangScheduler::ExpireReservations(absl::Time now) {
  // The heap may hold entries of gangs since committed, released, re-reserved or extended: an
  // entry counts only if the gang is still reserved with exactly that deadline.
  std::vector<std::string> expired;
  while (!expiry_.empty() && expiry_.top().first <= now) {
    auto [at, name] = expiry_.top();
    expiry_.pop();
    auto it = gangs_.find(name);
    if (it != gangs_.end() && it->second.state == GangState::kReserved &&
        it->second.expires_at == at) {
      (void)Release(name);  // now, so a duplicate entry finds nothing
      expired.push_back(std::move(name));
    }
  }
  drops_ += expired.size();
  return expired;
}

const GangRecord* GangScheduler::Find(absl::string_view name) const {
  auto it = gangs_.find(name);
  return it == gangs_.end() ? nullptr : &it->second;
}

std::vector<ReplanEvent> GangScheduler::SetNodeCordoned(int node, bool cordoned, absl::Time now) {
  HealthChanged();
  cluster_.SetNodeCordoned(node, cordoned);
  return cordoned ? ReactToHealthLoss(now) : std::vector<ReplanEvent>{};
}

std::vector<ReplanEvent> GangScheduler::SetGpuFaulty(int gpu, bool faulty, absl::Time now) {
  HealthChanged();
  cluster_.SetGpuFaulty(gpu, faulty);
  return faulty ? ReactToHealthLoss(now) : std::vector<ReplanEvent>{};
}

std::vector<ReplanEvent> GangScheduler::ReactToHealthLoss(absl::Time now) {
  std::vector<ReplanEvent> events;
  std::vector<std::string> names;
  for (const auto& [name, rec] : gangs_) names.push_back(name);
  for (const std::string& name : names) {
    GangRecord& rec = gangs_.find(name)->second;
    if (rec.state == GangState::kHeld) continue;  // the queue rebuilds holds from healthy GPUs
    std::vector<int> lost;
    for (size_t m = 0; m < rec.placement.members.size(); ++m) {
      const auto& gpus = rec.placement.members[m].gpus;
      if (std::any_of(gpus.begin(), gpus.end(), [&](int g) { return !cluster_.IsHealthy(g); })) {
        lost.push_back(static_cast<int>(m));
      }
    }
    if (lost.empty()) continue;
    if (rec.state == GangState::kReserved) {
      // Nothing runs yet: move the whole reservation, all-or-nothing.
      GangSpec spec = rec.spec;
      absl::Time expires = rec.expires_at;
      (void)Release(name);
      auto p = planner().Plan(spec);
      if (p.ok() && Adopt(spec, *p, GangState::kReserved, now).ok()) {
        absl::Time& at = gangs_.find(name)->second.expires_at;
        at = std::max(expires, now + options_.reservation_ttl);
        expiry_.push({at, name});
        events.push_back(
            {ReplanEvent::Kind::kReplanned,
             name,
             absl::StrCat("moved off unhealthy GPUs; now spans one ", cluster_.LevelName(p->level)),
             lost,
             {}});
      } else {
        ++drops_;
        events.push_back({ReplanEvent::Kind::kDropped,
                          name,
                          p.ok() ? "re-plan failed" : std::string(p.status().message()),
                          lost,
                          {}});
      }
      continue;
    }
    // One proposal for every member lost in this event, keeping slices (scheduler/replacement.h).
    auto repl = ProposeReplacement(*this, name, lost);
    if (!repl.ok()) {
      events.push_back({ReplanEvent::Kind::kReplacementImpossible,
                        name,
                        std::string(repl.status().message()),
                        lost,
                        {}});
      continue;
    }
    ReplanEvent ev{ReplanEvent::Kind::kReplacementProposed, name, "", lost, *repl};
    if (options_.auto_apply_replacements && ApplyReplacement(name, lost, *repl).ok()) {
      ev.kind = ReplanEvent::Kind::kReplacementApplied;
    }
    const GangRecord& after = gangs_.find(name)->second;
    ev.detail = absl::StrCat(lost.size(), " member(s) lost; replacement keeps the gang within one ",
                             cluster_.LevelName(after.placement.level));
    events.push_back(std::move(ev));
  }
  return events;
}

absl::Status GangScheduler::ApplyReplacement(absl::string_view name, const std::vector<int>& lost,
                                             const std::vector<MemberPlacement>& replacement) {
  Changed();
  auto it = gangs_.find(name);
  if (it == gangs_.end()) return absl::NotFoundError(absl::StrCat("no gang '", name, "'"));
  GangRecord& rec = it->second;
  if (lost.size() != replacement.size()) {
    return absl::InvalidArgumentError("replacement size differs from lost members");
  }
  for (int m : lost) {
    if (m < 0 || m >= static_cast<int>(rec.placement.members.size())) {
      return absl::InvalidArgumentError(absl::StrCat("member ", m, " out of range"));
    }
  }
  std::vector<int> fresh, old;
  for (const MemberPlacement& mp : replacement)
    fresh.insert(fresh.end(), mp.gpus.begin(), mp.gpus.end());
  for (int m : lost) {
    const auto& g = rec.placement.members[m].gpus;
    old.insert(old.end(), g.begin(), g.end());
  }
  if (absl::Status s = cluster_.Allocate(fresh); !s.ok()) return s;
  if (absl::Status s = cluster_.Release(old); !s.ok()) {
    (void)cluster_.Release(fresh);
    return absl::InternalError(absl::StrCat("releasing lost members: ", s.message()));
  }
  for (size_t i = 0; i < lost.size(); ++i) rec.placement.members[lost[i]] = replacement[i];
  SummarizePlacement(cluster_, &rec.placement);
  return absl::OkStatus();
}

absl::Status GangScheduler::CheckInvariants() const {
  if (absl::Status s = cluster_.CheckInvariants(); !s.ok()) return s;
  std::vector<char> held(cluster_.num_gpus(), 0);
  size_t total = 0;
  for (const auto& [name, rec] : gangs_) {
    for (int g : rec.placement.Gpus()) {
      if (g < 0 || g >= cluster_.num_gpus()) return absl::InternalError("GPU out of range");
      if (held[g]++) return absl::InternalError(absl::StrCat("GPU ", g, " held twice"));
      if (cluster_.IsFree(g)) {
        return absl::InternalError(absl::StrCat("gang ", name, " holds free GPU ", g));
      }
      ++total;
    }
  }
  size_t used = cluster_.num_gpus() - cluster_.free_mask().Count();
  if (used != total) {
    return absl::InternalError(absl::StrCat(used, " GPUs used but gangs hold ", total));
  }
  return absl::OkStatus();
}

}  // namespace topogang
