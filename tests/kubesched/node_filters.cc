#include "tests/kubesched/node_filters.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace topogang::kubesched {

bool ToleratesTaint(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return t.op == "Exists";
}

bool TolerationsTolerateTaint(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& t) { return ToleratesTaint(t, taint); });
}

const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints,
                                  const std::vector<Toleration>& tolerations) {
  for (const Taint& taint : taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (!TolerationsTolerateTaint(tolerations, taint)) return &taint;
  }
  return nullptr;
}

namespace {

bool Contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

bool MatchesLabelRequirement(const SelectorRequirement& req,
                             const std::map<std::string, std::string>& labels) {
  auto it = labels.find(req.key);
  const bool has = it != labels.end();
  if (req.op == "In") return !req.values.empty() && has && Contains(req.values, it->second);
  if (req.op == "NotIn") return !req.values.empty() && (!has || !Contains(req.values, it->second));
  if (req.op == "Exists") return req.values.empty() && has;
  if (req.op == "DoesNotExist") return req.values.empty() && !has;
  if (req.op == "Gt" || req.op == "Lt") {
    int64_t want = 0, got = 0;
    if (req.values.size() != 1 || !absl::SimpleAtoi(req.values[0], &want)) return false;
    if (!has || !absl::SimpleAtoi(it->second, &got)) return false;
    return req.op == "Gt" ? got > want : got < want;
  }
  return false;  // unknown operator: the selector does not parse
}

bool MatchesTerm(const SelectorTerm& term, const Node& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const SelectorRequirement& r : term.match_expressions) {
    if (!MatchesLabelRequirement(r, node.labels)) return false;
  }
  for (const SelectorRequirement& r : term.match_fields) {
    if (r.key != "metadata.name" || r.values.size() != 1) return false;
    if (r.op == "In" && node.name != r.values[0]) return false;
    if (r.op == "NotIn" && node.name == r.values[0]) return false;
    if (r.op != "In" && r.op != "NotIn") return false;
  }
  return true;
}

bool MatchesRequiredNodeAffinity(const Pod& pod, const Node& node) {
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  if (!pod.required_terms) return true;
  return std::any_of(pod.required_terms->begin(), pod.required_terms->end(),
                     [&](const SelectorTerm& t) { return MatchesTerm(t, node); });
}

Status FilterNodeUnschedulable(const Pod& pod, const Node& node) {
  if (!node.unschedulable) return {};
  const Taint unschedulable{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
  if (TolerationsTolerateTaint(pod.tolerations, unschedulable)) return {};
  return {Code::kUnschedulableAndUnresolvable, kNodeUnschedulable, {"node(s) were unschedulable"}};
}

Status FilterTaintToleration(const Pod& pod, const Node& node) {
  const Taint* t = FindUntoleratedTaint(node.taints, pod.tolerations);
  if (!t) return {};
  return {Code::kUnschedulableAndUnresolvable,
          kTaintToleration,
          {absl::StrCat("node(s) had untolerated taint {", t->key, ": ", t->value, "}")}};
}

Status FilterNodeAffinity(const Pod& pod, const Node& node) {
  if (MatchesRequiredNodeAffinity(pod, node)) return {};
  return {Code::kUnschedulableAndUnresolvable,
          kNodeAffinity,
          {"node(s) didn't match Pod's node affinity/selector"}};
}

std::vector<InsufficientResource> Fits(const Pod& pod, const NodeState& state,
                                       const std::set<std::string>& ignored) {
  std::vector<InsufficientResource> out;
  const Resources& alloc = state.node->allocatable;
  const Resources& used = state.requested;
  const Resources& req = pod.requests;
  if (state.num_pods + 1 > alloc.allowed_pods) {
    out.push_back({"pods", "Too many pods", false});
  }
  if (req.IsZero()) return out;
  if (req.milli_cpu > 0 && req.milli_cpu > alloc.milli_cpu - used.milli_cpu) {
    out.push_back({"cpu", "Insufficient cpu", req.milli_cpu > alloc.milli_cpu});
  }
  if (req.memory > 0 && req.memory > alloc.memory - used.memory) {
    out.push_back({"memory", "Insufficient memory", req.memory > alloc.memory});
  }
  if (req.ephemeral_storage > 0 &&
      req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage) {
    out.push_back({"ephemeral-storage", "Insufficient ephemeral-storage",
                   req.ephemeral_storage > alloc.ephemeral_storage});
  }
  for (const auto& [name, quantity] : req.scalar) {
    if (quantity == 0) continue;
    if (IsExtendedResourceName(name) && ignored.count(name)) continue;
    const int64_t cap = alloc.Scalar(name);
    if (quantity > cap - used.Scalar(name)) {
      out.push_back({name, "Insufficient " + name, quantity > cap});
    }
  }
  return out;
}

Status FilterNodeResourcesFit(const Pod& pod, const NodeState& state,
                              const std::set<std::string>& ignored) {
  std::vector<InsufficientResource> missing = Fits(pod, state, ignored);
  if (missing.empty()) return {};
  Status s{Code::kUnschedulable, kNodeResourcesFit, {}};
  for (const InsufficientResource& r : missing) {
    s.reasons.push_back(r.reason);
    if (r.unresolvable) s.code = Code::kUnschedulableAndUnresolvable;
  }
  return s;
}

Status RunFilters(const Pod& pod, const NodeState& state,
                  const std::set<std::string>& ignored_resources) {
  const Node& node = *state.node;
  if (Status s = FilterNodeUnschedulable(pod, node); !s.ok()) return s;
  if (Status s = FilterTaintToleration(pod, node); !s.ok()) return s;
  if (Status s = FilterNodeAffinity(pod, node); !s.ok()) return s;
  return FilterNodeResourcesFit(pod, state, ignored_resources);
}

}  // namespace topogang::kubesched
