#include "api/convert.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace topogang {

namespace {

absl::Status CheckLen(absl::string_view field, const std::string& v, size_t max) {
  if (v.size() > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("gang field '", field, "' is ", v.size(), " bytes; at most ", max));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GangSpec> GangFromProto(const v1::GangSpec& p) {
  for (auto [field, value] : {std::pair<const char*, const std::string*>{"name", &p.name()},
                              {"sku", &p.sku()},
                              {"required_tier", &p.required_tier()},
                              {"preferred_tier", &p.preferred_tier()},
                              {"slice_tier", &p.slice_tier()}}) {
    if (absl::Status s = CheckLen(field, *value, 253); !s.ok()) return s;
  }
  GangSpec g;
  g.name = p.name();
  g.members = p.members();
  g.gpus_per_member = p.gpus_per_member();
  g.sku = p.sku();
  g.allow_mixed_sku = p.allow_mixed_sku();
  g.required_tier = p.required_tier();
  g.preferred_tier = p.preferred_tier();
  g.slice.members = p.slice_members();
  g.slice.tier = p.slice_tier();
  g.priority = p.priority();
  if (absl::Status s = ValidateGang(g); !s.ok()) return s;
  return g;
}

void GangToProto(const GangSpec& g, v1::GangSpec* p) {
  p->set_name(g.name);
  p->set_members(g.members);
  p->set_gpus_per_member(g.gpus_per_member);
  p->set_sku(g.sku);
  p->set_allow_mixed_sku(g.allow_mixed_sku);
  p->set_required_tier(g.required_tier);
  p->set_preferred_tier(g.preferred_tier);
  p->set_slice_members(g.slice.members);
  p->set_slice_tier(g.slice.tier);
  p->set_priority(g.priority);
}

void PlacementToProto(const Cluster& c, const Placement& pl, v1::Placement* p) {
  for (size_t m = 0; m < pl.members.size(); ++m) {
    const MemberPlacement& mp = pl.members[m];
    v1::MemberPlacement* out = p->add_members();
    out->set_member(static_cast<int>(m));
    if (mp.node < 0 || mp.node >= c.num_nodes()) continue;
    out->set_node(c.node(mp.node).name);
    for (int g : mp.gpus) out->add_gpus(g - c.node(mp.node).gpu_begin);
  }
  if (pl.level >= 0 && pl.level < c.num_levels()) {
    p->set_tier(c.LevelName(pl.level));
    if (pl.domain >= 0 && pl.domain < c.num_domains()) p->set_domain(c.DomainPath(pl.domain));
  }
  p->set_bandwidth_gbps(pl.bandwidth_gbps);
  p->set_leftover_gpus(pl.leftover_gpus);
  p->set_preferred_met(pl.preferred_met);
  for (int n : pl.Nodes()) {
    if (n >= 0 && n < c.num_nodes()) p->add_nodes(c.node(n).name);
  }
  for (size_t l = 0; l < pl.domains_per_level.size() && static_cast<int>(l) < c.num_levels(); ++l) {
    (*p->mutable_domains_per_tier())[c.LevelName(static_cast<int>(l))] = pl.domains_per_level[l];
  }
}

int64_t UnixMillis(absl::Time t) { return absl::ToUnixMillis(t); }

v1::GangState GangStateToProto(GangState s) {
  const std::string name = GangStateName(s);
  if (name == "reserved") return v1::GANG_STATE_RESERVED;
  if (name == "running") return v1::GANG_STATE_RUNNING;
  if (name == "held") return v1::GANG_STATE_HELD;
  return v1::GANG_STATE_UNSPECIFIED;
}

void GangRecordToProto(const Cluster& c, const GangRecord& r, v1::Gang* p) {
  GangToProto(r.spec, p->mutable_spec());
  p->set_state(GangStateToProto(r.state));
  PlacementToProto(c, r.placement, p->mutable_placement());
  p->set_reserved_at_unix_ms(UnixMillis(r.reserved_at));
  p->set_expires_at_unix_ms(r.state == GangState::kReserved ? UnixMillis(r.expires_at) : 0);
  p->set_slower_since_repair(r.slower_since_repair);
}

void EventToProto(const DecisionEvent& e, v1::DecisionEvent* p) {
  p->set_seq(e.seq);
  p->set_time_unix_ms(UnixMillis(e.time));
  p->set_kind(e.kind);
  p->set_gang(e.gang);
  p->set_node(e.node);
  p->set_detail(e.detail);
}

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace topogang
