#include "scheduler/planner.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"

namespace topogang {

// One placement problem: member shape, SKU filter and (optional) slice units.
struct Planner::Request {
  int sku = kAnySku;
  int gpus = 1;  // per member
  int members = 0;
  int slice_k = 0;  // 0 = no slices
  int slice_level = -1;
  std::vector<int> slice_cap;  // slices that fit, for domains above the slice level
};

int Planner::UnitCap(const Request& r, int d) const {
  if (r.slice_k == 0) return c_.MemberCapacity(d, r.sku, r.gpus);
  if (c_.domain(d).level >= r.slice_level) return c_.MemberCapacity(d, r.sku, r.gpus) / r.slice_k;
  return r.slice_cap[d];
}

// Best fit: fewer free GPUs left in the domain, then in its parent, and so on; then lower id.
bool Planner::Better(const Request& r, int a, int b) const {
  for (int x = a, y = b; x >= 0 && y >= 0 && x != y;
       x = c_.domain(x).parent, y = c_.domain(y).parent) {
    int fx = c_.FreeHealthy(x, r.sku), fy = c_.FreeHealthy(y, r.sku);
    if (fx != fy) return fx < fy;
  }
  return a < b;
}

bool Planner::Search(const Request& r, int scope, int top_level, std::vector<MemberPlacement>* out,
                     int* chosen) const {
  const int units = r.slice_k ? r.members / r.slice_k : r.members;
  const long need_gpus = static_cast<long>(r.members) * r.gpus;
  top_level = std::max(top_level, c_.domain(scope).level);
  std::vector<int> stack;
  for (int level = c_.node_level(); level >= top_level; --level) {
    if (c_.MaxDomainGpus(level) < need_gpus) continue;
    if (level == c_.node_level() && level > top_level) {
      // One node: the per-domain histograms say which free count is the tightest fit, so only
      // the parents holding such a node are compared (same answer as comparing every node).
      int best = SearchOneNode(r, scope, need_gpus);
      if (best >= 0) {
        Assign(r, best, units, r.slice_k > 0, out);
        *chosen = best;
        return true;
      }
      continue;
    }
    int best = -1;
    stack.assign(1, scope);
    while (!stack.empty()) {
      int d = stack.back();
      stack.pop_back();
      if (UnitCap(r, d) < units) continue;  // capacities only shrink going down: prune
      const Domain& dom = c_.domain(d);
      if (dom.level == level) {
        if (best < 0 || Better(r, d, best)) best = d;
        continue;
      }
      for (int ch = dom.child_end - 1; ch >= dom.child_begin; --ch) stack.push_back(ch);
    }
    if (best >= 0) {
      Assign(r, best, units, r.slice_k > 0, out);
      *chosen = best;
      return true;
    }
  }
  return false;
}

int Planner::SearchOneNode(const Request& r, int scope, long need_gpus) const {
  int k = -1;
  for (int f = static_cast<int>(need_gpus); f <= c_.max_gpus_per_node(); ++f) {
    if (c_.NodesWithFree(scope, r.sku, f) > 0) {
      k = f;
      break;
    }
  }
  if (k < 0) return -1;
  const int parent_level = c_.node_level() - 1;
  int best_parent = -1;
  std::vector<int> stack{scope};
  while (!stack.empty()) {
    int d = stack.back();
    stack.pop_back();
    if (c_.NodesWithFree(d, r.sku, k) == 0) continue;
    const Domain& dom = c_.domain(d);
    if (dom.level == parent_level) {
      if (best_parent < 0 || Better(r, d, best_parent)) best_parent = d;
      continue;
    }
    for (int ch = dom.child_end - 1; ch >= dom.child_begin; --ch) stack.push_back(ch);
  }
  const Domain& p = c_.domain(best_parent);
  for (int ch = p.child_begin; ch < p.child_end; ++ch) {
    if (c_.NodesWithFree(ch, r.sku, k) > 0) return ch;
  }
  return -1;
}

void Planner::Assign(const Request& r, int d, int units, bool slice_units,
                     std::vector<MemberPlacement>* out) const {
  const Domain& dom = c_.domain(d);
  if (slice_units && dom.level >= r.slice_level) {
    slice_units = false;
    units *= r.slice_k;
  }
  if (dom.level == c_.node_level()) {
    const int node = dom.node_begin;
    const BitMask& f = c_.free_mask();
    const BitMask& h = c_.healthy_mask();
    size_t g = dom.gpu_begin;
    for (int m = 0; m < units; ++m) {
      MemberPlacement mp{node, {}};
      for (int i = 0; i < r.gpus; ++i) {
        g = BitMask::FindNextAnd(f, h, g, dom.gpu_end);
        mp.gpus.push_back(static_cast<int>(g++));
      }
      out->push_back(std::move(mp));
    }
    return;
  }
  auto cap = [&](int ch) {
    return slice_units ? UnitCap(r, ch) : c_.MemberCapacity(ch, r.sku, r.gpus);
  };
  std::vector<std::pair<int, int>> kids;  // (capacity, id)
  for (int ch = dom.child_begin; ch < dom.child_end; ++ch) {
    int k = cap(ch);
    if (k > 0) kids.emplace_back(k, ch);
  }
  // Tightest single child that holds them all, if any.
  int pick = -1;
  for (size_t i = 0; i < kids.size(); ++i) {
    if (kids[i].first < units) continue;
    if (pick < 0 || kids[i].first < kids[pick].first ||
        (kids[i].first == kids[pick].first && Better(r, kids[i].second, kids[pick].second))) {
      pick = static_cast<int>(i);
    }
  }
  if (pick >= 0) {
    Assign(r, kids[pick].second, units, slice_units, out);
    return;
  }
  // Otherwise the gang spans several domains of the lowest tier above the nodes (leaves; NVLink
  // domains on NVL72): choose those directly, however they group into the tiers between, as long
  // as those tiers are non-blocking, since they decide how many NICs and uplinks the gang's
  // traffic crosses (a roomy leaf made of two half-free racks is worse than one free rack).
  // Across an oversubscribed tier the fewest domains of that tier come first.
  int flat = dom.level + 1;
  if (!slice_units && c_.UplinkOversubscription(flat) <= 1) {
    while (flat < c_.node_level() - 1 && c_.UplinkOversubscription(flat + 1) <= 1) ++flat;
  }
  if (flat > dom.level + 1) {
    kids.clear();
    for (int u = c_.LevelBegin(flat); u < c_.LevelEnd(flat); ++u) {
      const Domain& ud = c_.domain(u);
      if (ud.node_begin < dom.node_begin || ud.node_end > dom.node_end) continue;
      const int k = cap(u);
      if (k > 0) kids.emplace_back(k, u);
    }
  }
  // As few of them as possible: the roomiest. When the split crosses a slower tier than the
  // children's own (NVLink domains on NVL72, islands behind an oversubscribed core), the units are
  // shared as evenly as the children's room allows, in whole nodes' worth of members: an
  // all-reduce across them is as slow as the smallest share (the hierarchical algorithm's ring
  // between NVLink domains runs over each domain's NICs; a lopsided split gives the small side
  // only its own share of the oversubscribed uplinks; docs/network-model.md). Filling the
  // roomiest and putting the rest in the tightest left a sliver (a 72-tray gang as
  // 18+18+18+17+1 trays). Balanced shares are Kueue's BalancedPlacement (KEP 2724). Across
  // non-blocking children the split costs nothing, so there the roomiest are filled and the
  // rest goes to the tightest child that holds it (best fit: whole leaves stay free).
  std::sort(kids.begin(), kids.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return Better(r, a.second, b.second);
  });
  size_t k = 0;
  for (int room = 0; k < kids.size() && room < units; ++k) room += kids[k].first;
  std::vector<std::pair<int, int>> chosen;
  std::vector<int> share;
  const int child_level = kids.empty() ? dom.level + 1 : c_.domain(kids[0].second).level;
  if (c_.SpanBandwidthGbps(child_level) > c_.SpanBandwidthGbps(dom.level)) {
    // Water-fill: the smallest children first, each its fair share of what is left (rounded up
    // to whole nodes) or its room.
    chosen.assign(kids.begin(), kids.begin() + static_cast<long>(k));
    std::sort(chosen.begin(), chosen.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return a.second < b.second;
    });
    const int per_node = slice_units ? 1 : std::max(1, c_.max_gpus_per_node() / r.gpus);
    int remaining = units;
    for (size_t i = 0; i < k; ++i) {
      const int left = static_cast<int>(k - i);
      const int fair = (remaining + left - 1) / left;
      const int whole = (fair + per_node - 1) / per_node * per_node;
      share.push_back(std::min({chosen[i].first, whole, remaining}));
      remaining -= share.back();
    }
  } else {
    std::vector<char> used(kids.size(), 0);
    int remaining = units;
    for (size_t i = 0; i < kids.size() && remaining > 0; ++i) {
      // The tightest child that holds the rest, if any; else the roomiest, filled.
      int pick = -1;
      for (size_t j = 0; j < kids.size(); ++j) {
        if (used[j] || kids[j].first < remaining) continue;
        if (pick < 0 || kids[j].first < kids[pick].first ||
            (kids[j].first == kids[pick].first && Better(r, kids[j].second, kids[pick].second))) {
          pick = static_cast<int>(j);
        }
      }
      if (pick < 0) pick = static_cast<int>(i);  // kids are sorted roomiest first
      while (used[pick]) ++pick;
      used[pick] = 1;
      chosen.push_back(kids[pick]);
      share.push_back(std::min(kids[pick].first, remaining));
      remaining -= share.back();
    }
    k = chosen.size();
  }
  // Children in domain order, so members of one domain are contiguous and ranks follow topology.
  std::vector<size_t> order(k);
  for (size_t i = 0; i < k; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return chosen[a].second < chosen[b].second; });
  for (size_t i : order) {
    if (share[i] > 0) Assign(r, chosen[i].second, share[i], slice_units, out);
  }
}

absl::StatusOr<Placement> Planner::PlanForSku(const GangSpec& gang, int sku, int top_level,
                                              int pref_level) const {
  Request r;
  r.sku = sku;
  r.gpus = gang.gpus_per_member;
  r.members = gang.members;
  if (gang.slice.members > 0) {
    r.slice_k = gang.slice.members;
    r.slice_level = c_.LevelByName(gang.slice.tier);
    // Slices that fit above the slice tier: sums over the slice-tier domains below.
    r.slice_cap.assign(c_.num_domains(), 0);
    for (int l = r.slice_level - 1; l >= 0; --l) {
      for (int d = c_.LevelBegin(l); d < c_.LevelEnd(l); ++d) {
        const Domain& dom = c_.domain(d);
        int total = 0;
        for (int ch = dom.child_begin; ch < dom.child_end; ++ch) total += UnitCap(r, ch);
        r.slice_cap[d] = total;
      }
    }
  }
  Placement p;
  int chosen = -1;
  if (!Search(r, 0, top_level, &p.members, &chosen)) {
    return absl::ResourceExhaustedError(NoFitReason(gang, sku, top_level));
  }
  if (!r.slice_k) WholeNodes(r, &p.members, &chosen);
  SummarizePlacement(c_, &p);
  p.leftover_gpus = c_.FreeHealthy(chosen, sku) - static_cast<int>(gang.total_gpus());
  p.preferred_met = pref_level < 0 || p.level >= pref_level;
  return p;
}

void Planner::WholeNodes(const Request& r, std::vector<MemberPlacement>* members,
                         int* chosen) const {
  const int per_node = c_.max_gpus_per_node() / r.gpus;
  if (per_node < 2 || r.members <= per_node || r.members % per_node != 0) return;
  int fewest = per_node;  // the fewest members the plan put on one node
  {
    std::vector<std::pair<int, int>> count;  // (node, members), members in node order
    for (const MemberPlacement& m : *members) {
      if (count.empty() || count.back().first != m.node) count.emplace_back(m.node, 0);
      ++count.back().second;
    }
    for (const auto& [n, k] : count) fewest = std::min(fewest, k);
  }
  if (fewest == per_node) return;
  Request whole = r;
  whole.gpus = r.gpus * per_node;
  whole.members = r.members / per_node;
  std::vector<MemberPlacement> out;
  int at = -1;
  if (!Search(whole, 0, c_.domain(*chosen).level, &out, &at)) return;
  members->clear();
  for (const MemberPlacement& m : out) {
    for (int i = 0; i < per_node; ++i) {
      members->push_back({m.node, std::vector<int>(m.gpus.begin() + i * r.gpus,
                                                   m.gpus.begin() + (i + 1) * r.gpus)});
    }
  }
  *chosen = at;
}

absl::StatusOr<Placement> Planner::Plan(const GangSpec& gang) const {
  if (absl::Status s = ValidateGang(gang); !s.ok()) return s;
  auto level_of = [&](const std::string& tier, const char* what) -> absl::StatusOr<int> {
    if (tier.empty()) return -1;
    int l = c_.LevelByName(tier);
    if (l < 0) {
      std::string known;
      for (const auto& n : c_.level_names()) absl::StrAppend(&known, known.empty() ? "" : ", ", n);
      return absl::InvalidArgumentError(absl::StrCat("gang '", gang.name, "': unknown ", what,
                                                     " tier '", tier, "' (tiers: ", known, ")"));
    }
    return l;
  };
  auto req = level_of(gang.required_tier, "required");
  auto pref = level_of(gang.preferred_tier, "preferred");
  auto slice = level_of(gang.slice.tier, "slice");
  for (const absl::Status& s : {req.status(), pref.status(), slice.status()}) {
    if (!s.ok()) return s;
  }
  const int top_level = std::max(*req, 0);
  if (*slice >= 0 && *req >= 0 && *slice < *req) {
    return absl::InvalidArgumentError(
        absl::StrCat("gang '", gang.name, "': slice tier '", gang.slice.tier,
                     "' is wider than required tier '", gang.required_tier, "'"));
  }
  if (gang.gpus_per_member > c_.max_gpus_per_node()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("gang '", gang.name, "': each member needs ", gang.gpus_per_member,
                     " GPUs on one node; the largest node has ", c_.max_gpus_per_node()));
  }
  std::vector<int> skus;
  if (!gang.sku.empty()) {
    int s = c_.FindSku(gang.sku);
    if (s < 0) {
      std::string known;
      for (int i = 0; i < c_.num_skus(); ++i) absl::StrAppend(&known, i ? ", " : "", c_.SkuName(i));
      return absl::ResourceExhaustedError(absl::StrCat(
          "gang '", gang.name, "': no node has GPU model '", gang.sku, "' (models: ", known, ")"));
    }
    skus.push_back(s);
  } else if (gang.allow_mixed_sku || c_.num_skus() == 1) {
    skus.push_back(c_.num_skus() == 1 ? 0 : kAnySku);
  } else {
    for (int s = 0; s < c_.num_skus(); ++s) skus.push_back(s);
  }
  std::optional<Placement> best;
  absl::Status last;
  for (int s : skus) {
    auto p = PlanForSku(gang, s, top_level, *pref);
    if (!p.ok()) {
      if (last.ok() || skus.size() == 1) last = p.status();
      continue;
    }
    // Across SKUs: narrower span, then tighter fit.
    if (!best || p->level > best->level ||
        (p->level == best->level && p->leftover_gpus < best->leftover_gpus)) {
      best = std::move(*p);
    }
  }
  if (best) return *best;
  if (skus.size() > 1) {
    return absl::ResourceExhaustedError(
        absl::StrCat(last.message(),
                     " (tried each GPU model; a gang does not mix models unless allow_mixed_sku)"));
  }
  return last;
}

std::string Planner::NoFitReason(const GangSpec& gang, int sku, int top_level) const {
  const std::string shape = gang.gpus_per_member == 1
                                ? absl::StrCat(gang.members, " GPUs")
                                : absl::StrCat(gang.members, " members x ", gang.gpus_per_member,
                                               " GPUs (", gang.total_gpus(), " GPUs)");
  const std::string model = sku == kAnySku || c_.num_skus() == 1
                                ? std::string()
                                : absl::StrCat(" of model ", c_.SkuName(sku));
  if (gang.slice.members > 0) {
    return absl::StrCat(
        "gang '", gang.name, "': needs ", shape, model, " in slices of ", gang.slice.members,
        " members, each slice within one ", gang.slice.tier,
        top_level > 0 ? absl::StrCat(", all within one ", c_.LevelName(top_level)) : std::string(),
        "; not enough room in any ", gang.slice.tier, " now");
  }
  int best_members = 0;
  std::string best_name;
  for (int d = c_.LevelBegin(top_level); d < c_.LevelEnd(top_level); ++d) {
    int m = c_.MemberCapacity(d, sku, gang.gpus_per_member);
    if (m > best_members) best_members = m, best_name = c_.DomainPath(d);
  }
  const long room = static_cast<long>(best_members) * gang.gpus_per_member;
  const std::string unit =
      gang.gpus_per_member == 1
          ? absl::StrCat(room, " GPUs")
          : absl::StrCat(best_members, best_members == 1 ? " member (" : " members (", room,
                         " GPUs)");
  if (top_level == 0) {
    return absl::StrCat("gang '", gang.name, "': needs ", shape, model,
                        "; the cluster has room for only ", unit, " now (", c_.FreeHealthy(0, sku),
                        " free healthy GPUs)");
  }
  const std::string& tier = c_.LevelName(top_level);
  return absl::StrCat("gang '", gang.name, "': needs ", shape, model, " within one ", tier,
                      "; the largest free ", tier,
                      best_members ? absl::StrCat(" (", best_name, ")") : std::string(),
                      " has room for only ", unit);
}

absl::StatusOr<std::vector<MemberPlacement>> Planner::PlanNear(
    const GangSpec& gang, int count, std::span<const int> anchor_nodes) const {
  int sku = kAnySku;
  if (!gang.allow_mixed_sku && !anchor_nodes.empty()) sku = c_.node(anchor_nodes[0]).sku;
  int top_level = 0;
  if (!gang.required_tier.empty()) top_level = std::max(0, c_.LevelByName(gang.required_tier));
  Request r;
  r.sku = sku;
  r.gpus = gang.gpus_per_member;
  r.members = count;
  if (count <= 0) return std::vector<MemberPlacement>{};
  for (int level = c_.node_level(); level >= top_level; --level) {
    // Scopes at this level that hold survivors, most survivors first.
    std::vector<std::pair<int, int>> scopes;  // (-survivors, domain)
    for (int n : anchor_nodes) {
      int d = c_.AncestorAt(c_.NodeDomain(n), level);
      auto it = std::find_if(scopes.begin(), scopes.end(), [&](auto& s) { return s.second == d; });
      if (it == scopes.end()) {
        scopes.emplace_back(-1, d);
      } else {
        --it->first;
      }
    }
    std::sort(scopes.begin(), scopes.end());
    for (auto [neg, scope] : scopes) {
      std::vector<MemberPlacement> out;
      int chosen;
      if (Search(r, scope, level, &out, &chosen)) return out;
    }
  }
  if (anchor_nodes.empty()) {
    Request any = r;
    std::vector<MemberPlacement> out;
    int chosen;
    if (Search(any, 0, top_level, &out, &chosen)) return out;
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "gang '", gang.name, "': no room for ", count, " replacement member(s) of ",
      gang.gpus_per_member, " GPUs",
      top_level > 0 ? absl::StrCat(" within its ", c_.LevelName(top_level)) : std::string()));
}

}  // namespace topogang
