#include "extender/wire_types.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace topogang {
namespace {

absl::Status NotObject(absl::string_view what, const Json& j) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": expected a JSON object, got ", j.type_name()));
}

absl::StatusOr<std::vector<std::string>> StringArray(const Json& arr, absl::string_view what) {
  std::vector<std::string> out;
  out.reserve(arr.size());
  for (const Json& v : arr) {
    if (!v.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": expected strings, got ", v.type_name()));
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> StringMap(const Json& obj,
                                                                           absl::string_view key,
                                                                           absl::string_view what) {
  std::vector<std::pair<std::string, std::string>> out;
  auto m = JsonObject(obj, key, what);
  if (!m.ok()) return m.status();
  if (*m == nullptr) return out;
  for (auto it = (*m)->begin(); it != (*m)->end(); ++it) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ".", it.key(), ": expected a string"));
    }
    out.emplace_back(it.key(), it->get<std::string>());
  }
  return out;
}

absl::StatusOr<std::map<std::string, Victims>> ParseVictimsMap(const Json& m, bool meta,
                                                               absl::string_view what) {
  std::map<std::string, Victims> out;
  for (auto it = m.begin(); it != m.end(); ++it) {
    std::string where = absl::StrCat(what, ".", it.key());
    if (it->is_null()) {
      out[it.key()];
      continue;
    }
    if (!it->is_object()) return NotObject(where, *it);
    Victims v;
    auto pdb = JsonInt(*it, "NumPDBViolations", where + ".NumPDBViolations");
    if (!pdb.ok()) return pdb.status();
    v.num_pdb_violations = *pdb;
    auto pods = JsonArray(*it, "Pods", where + ".Pods");
    if (!pods.ok()) return pods.status();
    if (*pods) {
      for (const Json& p : **pods) {
        if (!p.is_object()) return NotObject(where + ".Pods[]", p);
        std::string uid;
        if (meta) {
          auto u = JsonString(p, "UID", where + ".Pods[].UID");
          if (!u.ok()) return u.status();
          uid = *u;
        } else {
          auto md = JsonObject(p, "metadata", where + ".Pods[].metadata");
          if (!md.ok()) return md.status();
          if (*md) {
            auto u = JsonString(**md, "uid", where + ".Pods[].metadata.uid");
            if (!u.ok()) return u.status();
            uid = *u;
          }
          v.pods.push_back(p);
        }
        v.uids.push_back(uid);
      }
    }
    out[it.key()] = std::move(v);
  }
  return out;
}

}  // namespace

std::string SerializeExtenderArgs(const ExtenderArgs& a) {
  std::string out = "{\"Pod\":";
  out += DumpJson(a.pod);
  if (a.node_cache) {
    out += ",\"Nodes\":null,\"NodeNames\":";
    out += DumpJson(Json(a.names));
  } else {
    out += ",\"Nodes\":{\"metadata\":";
    out += a.node_list_meta.empty() ? "{}" : a.node_list_meta;
    out += ",\"items\":[";
    for (size_t i = 0; i < a.node_items.size(); ++i) {
      if (i) out += ',';
      out += a.node_items[i];
    }
    out += "]},\"NodeNames\":null";
  }
  out += '}';
  return out;
}

std::string SerializeFilterResult(const ExtenderFilterResult& r) {
  // Built by hand: linear in the number of nodes (see AppendJsonString).
  std::string out;
  size_t estimate = 128;
  for (const auto& n : r.node_names) estimate += n.size() + 3;
  for (const auto& [n, m] : r.failed) estimate += n.size() + m.size() + 6;
  for (const auto& [n, m] : r.failed_unresolvable) estimate += n.size() + m.size() + 6;
  out.reserve(estimate);
  out.append("{\"Nodes\":");
  if (r.node_cache) {
    out.append("null,\"NodeNames\":[");
    for (size_t i = 0; i < r.node_names.size(); ++i) {
      if (i) out.push_back(',');
      AppendJsonString(&out, r.node_names[i]);
    }
    out.append("]");
  } else {
    out.append(r.nodes.is_null() ? std::string(R"({"metadata":{},"items":[]})")
                                 : DumpJson(r.nodes));
    out.append(",\"NodeNames\":null");
  }
  auto map = [&](const char* key, const std::vector<std::pair<std::string, std::string>>& v) {
    out.append(",\"");
    out.append(key);
    out.append("\":{");
    bool first = true;
    for (const auto& [n, m] : v) {
      if (!first) out.push_back(',');
      first = false;
      AppendJsonString(&out, n);
      out.push_back(':');
      AppendJsonString(&out, m);
    }
    out.push_back('}');
  };
  map("FailedNodes", r.failed);
  map("FailedAndUnresolvableNodes", r.failed_unresolvable);
  out.append(",\"Error\":");
  AppendJsonString(&out, r.error);
  out.push_back('}');
  return out;
}

uint16_t FilterVerdicts::AddReason(std::string text, bool unresolvable) {
  for (size_t k = 0; k < reasons.size(); ++k) {
    if (reasons[k].text == text && reasons[k].unresolvable == unresolvable) {
      return static_cast<uint16_t>(k + 1);
    }
  }
  reasons.push_back({std::move(text), unresolvable});
  return static_cast<uint16_t>(reasons.size());
}

namespace {

// Appends into a buffer that grows geometrically, with one memcpy per piece: std::string::append
// per piece costs more than the copy itself when the pieces are 10-byte node names.
class RawWriter {
 public:
  explicit RawWriter(size_t capacity) { buf_.resize(capacity); }
  // Room for `more` bytes at Cursor().
  char* Reserve(size_t more) {
    if (n_ + more > buf_.size()) buf_.resize(std::max(buf_.size() * 2, n_ + more));
    return buf_.data() + n_;
  }
  void Advance(size_t k) { n_ += k; }
  void Put(absl::string_view s) {
    std::memcpy(Reserve(s.size()), s.data(), s.size());
    n_ += s.size();
  }
  void Put(char c) {
    *Reserve(1) = c;
    ++n_;
  }
  // `<sep>"<name>"<tail>` in one step, for the per-node entries of large replies.
  void PutEntry(bool comma, absl::string_view name, absl::string_view tail) {
    char* p = Reserve(name.size() + tail.size() + 3);
    char* const start = p;
    if (comma) *p++ = ',';
    *p++ = '"';
    std::memcpy(p, name.data(), name.size());
    p += name.size();
    *p++ = '"';
    std::memcpy(p, tail.data(), tail.size());
    p += tail.size();
    n_ += p - start;
  }
  std::string Take() {
    buf_.resize(n_);
    return std::move(buf_);
  }

 private:
  std::string buf_;
  size_t n_ = 0;
};

}  // namespace

std::string SerializeFilterVerdicts(const ExtenderArgs& args, const FilterVerdicts& v) {
  const std::vector<std::string>& names = args.names;
  const size_t n = std::min(names.size(), v.verdict.size());
  // Names as JSON literals: plain names are quoted on the fly, others escaped once here.
  std::vector<std::string> escaped;
  if (!args.names_plain) {
    escaped.resize(n);
    for (size_t i = 0; i < n; ++i) AppendJsonString(&escaped[i], names[i]);
  }
  // One entry: [,]"name"<tail>. Escaped names carry their own quotes.
  auto put_entry = [&](RawWriter& w, bool comma, size_t i, absl::string_view tail) {
    if (args.names_plain) return w.PutEntry(comma, names[i], tail);
    if (comma) w.Put(',');
    w.Put(escaped[i]);
    w.Put(tail);
  };
  // ":"<reason>" for each reason, escaped once.
  std::vector<std::string> suffix(v.reasons.size());
  size_t estimate = 256;
  for (size_t k = 0; k < v.reasons.size(); ++k) {
    suffix[k] = ":";
    AppendJsonString(&suffix[k], v.reasons[k].text);
  }
  for (size_t i = 0; i < n; ++i) {
    const uint16_t k = v.verdict[i];
    if (k > v.reasons.size()) continue;  // left out (kOmit)
    estimate += names[i].size() + 4 + (k ? suffix[k - 1].size() : 0);
  }
  RawWriter w(estimate);
  w.Put("{\"Nodes\":");
  if (args.node_cache) {
    w.Put("null,\"NodeNames\":[");
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      if (v.verdict[i] != 0) continue;
      put_entry(w, !first, i, "");
      first = false;
    }
    w.Put(']');
  } else {
    w.Put("{\"metadata\":");
    w.Put(args.node_list_meta.empty() ? absl::string_view("{}") : args.node_list_meta);
    w.Put(",\"items\":[");
    bool first = true;
    for (size_t i = 0; i < n && i < args.node_items.size(); ++i) {
      if (v.verdict[i] != 0) continue;
      if (!first) w.Put(',');
      first = false;
      w.Put(args.node_items[i]);
    }
    w.Put("]},\"NodeNames\":null");
  }
  for (bool unresolvable : {false, true}) {
    w.Put(unresolvable ? ",\"FailedAndUnresolvableNodes\":{" : ",\"FailedNodes\":{");
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      uint16_t k = v.verdict[i];
      if (k == 0 || k > v.reasons.size() || v.reasons[k - 1].unresolvable != unresolvable) continue;
      put_entry(w, !first, i, suffix[k - 1]);
      first = false;
    }
    w.Put('}');
  }
  w.Put(",\"Error\":");
  std::string err;
  AppendJsonString(&err, v.error);
  w.Put(err);
  w.Put('}');
  return w.Take();
}

ExtenderFilterResult ToFilterResult(const ExtenderArgs& args, const FilterVerdicts& v) {
  ExtenderFilterResult r;
  r.node_cache = args.node_cache;
  r.error = v.error;
  Json items = Json::array();
  const size_t n = std::min(args.names.size(), v.verdict.size());
  for (size_t i = 0; i < n; ++i) {
    uint16_t k = v.verdict[i];
    if (k == 0) {
      if (r.node_cache) {
        r.node_names.push_back(args.names[i]);
      } else if (i < args.node_items.size()) {
        items.push_back(Json::parse(args.node_items[i], nullptr, false));
      }
    } else if (k <= v.reasons.size()) {
      const FilterVerdicts::Reason& reason = v.reasons[k - 1];
      (reason.unresolvable ? r.failed_unresolvable : r.failed)
          .emplace_back(args.names[i], reason.text);
    }
  }
  if (!r.node_cache) {
    Json meta = Json::parse(args.node_list_meta, nullptr, false);
    if (!meta.is_object()) meta = Json::object();
    r.nodes = Json{{"metadata", std::move(meta)}, {"items", std::move(items)}};
  }
  return r;
}

absl::StatusOr<ExtenderFilterResult> ParseFilterResult(absl::string_view body) {
  auto j = ParseJson(body);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return NotObject("ExtenderFilterResult", *j);
  ExtenderFilterResult r;
  auto names = JsonArray(*j, "NodeNames", "ExtenderFilterResult.NodeNames");
  if (!names.ok()) return names.status();
  auto nodes = JsonObject(*j, "Nodes", "ExtenderFilterResult.Nodes");
  if (!nodes.ok()) return nodes.status();
  if (*names) {
    auto v = StringArray(**names, "ExtenderFilterResult.NodeNames");
    if (!v.ok()) return v.status();
    r.node_names = std::move(*v);
  } else if (*nodes) {
    r.node_cache = false;
    r.nodes = **nodes;
    if (const Json* items = GoField(**nodes, "items"); items && items->is_array()) {
      for (const Json& n : *items) {
        const Json* md = GoField(n, "metadata");
        const Json* name = md ? GoField(*md, "name") : nullptr;
        if (name && name->is_string()) r.node_names.push_back(name->get<std::string>());
      }
    }
  }
  auto f = StringMap(*j, "FailedNodes", "ExtenderFilterResult.FailedNodes");
  if (!f.ok()) return f.status();
  r.failed = std::move(*f);
  auto fu = StringMap(*j, "FailedAndUnresolvableNodes",
                      "ExtenderFilterResult.FailedAndUnresolvableNodes");
  if (!fu.ok()) return fu.status();
  r.failed_unresolvable = std::move(*fu);
  auto e = JsonString(*j, "Error", "ExtenderFilterResult.Error");
  if (!e.ok()) return e.status();
  r.error = *e;
  return r;
}

std::string SerializeHostPriorityList(const std::vector<HostPriority>& list) {
  Json j = Json::array();
  for (const HostPriority& h : list) {
    Json o = Json::object();
    o["Host"] = h.host;
    o["Score"] = h.score;
    j.push_back(std::move(o));
  }
  return DumpJson(j);
}

absl::StatusOr<std::vector<HostPriority>> ParseHostPriorityList(absl::string_view body) {
  auto j = ParseJson(body);
  if (!j.ok()) return j.status();
  std::vector<HostPriority> out;
  if (j->is_null()) return out;
  if (!j->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("HostPriorityList: expected an array, got ", j->type_name()));
  }
  for (const Json& h : *j) {
    if (!h.is_object()) return NotObject("HostPriority", h);
    auto host = JsonString(h, "Host", "HostPriority.Host");
    auto score = JsonInt(h, "Score", "HostPriority.Score");
    if (!host.ok()) return host.status();
    if (!score.ok()) return score.status();
    out.push_back({*host, *score});
  }
  return out;
}

absl::StatusOr<ExtenderBindingArgs> ParseBindingArgs(absl::string_view body) {
  auto j = ParseJson(body);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return NotObject("ExtenderBindingArgs", *j);
  ExtenderBindingArgs a;
  for (auto [key, field] :
       {std::pair{"PodName", &a.pod_name}, std::pair{"PodNamespace", &a.pod_namespace},
        std::pair{"PodUID", &a.pod_uid}, std::pair{"Node", &a.node}}) {
    auto v = JsonString(*j, key, absl::StrCat("ExtenderBindingArgs.", key));
    if (!v.ok()) return v.status();
    *field = std::move(*v);
  }
  if (a.pod_name.empty()) return absl::InvalidArgumentError("ExtenderBindingArgs.PodName: missing");
  if (a.node.empty()) return absl::InvalidArgumentError("ExtenderBindingArgs.Node: missing");
  if (a.pod_namespace.empty()) a.pod_namespace = "default";
  return a;
}

std::string SerializeBindingArgs(const ExtenderBindingArgs& a) {
  Json j = Json::object();
  j["PodName"] = a.pod_name;
  j["PodNamespace"] = a.pod_namespace;
  j["PodUID"] = a.pod_uid;
  j["Node"] = a.node;
  return DumpJson(j);
}

std::string SerializeBindingResult(const ExtenderBindingResult& r) {
  Json j = Json::object();
  j["Error"] = r.error;
  return DumpJson(j);
}

absl::StatusOr<ExtenderBindingResult> ParseBindingResult(absl::string_view body) {
  auto j = ParseJson(body);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return NotObject("ExtenderBindingResult", *j);
  auto e = JsonString(*j, "Error", "ExtenderBindingResult.Error");
  if (!e.ok()) return e.status();
  return ExtenderBindingResult{*e};
}

absl::StatusOr<ExtenderPreemptionArgs> ParsePreemptionArgs(absl::string_view body) {
  auto j = ParseJson(body);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return NotObject("ExtenderPreemptionArgs", *j);
  ExtenderPreemptionArgs a;
  const Json* pod = GoField(*j, "Pod");
  if (pod == nullptr) return absl::InvalidArgumentError("ExtenderPreemptionArgs.Pod: missing");
  if (!pod->is_object()) return NotObject("ExtenderPreemptionArgs.Pod", *pod);
  a.pod = *pod;
  auto meta =
      JsonObject(*j, "NodeNameToMetaVictims", "ExtenderPreemptionArgs.NodeNameToMetaVictims");
  if (!meta.ok()) return meta.status();
  auto full = JsonObject(*j, "NodeNameToVictims", "ExtenderPreemptionArgs.NodeNameToVictims");
  if (!full.ok()) return full.status();
  if (*meta) {
    auto v = ParseVictimsMap(**meta, true, "NodeNameToMetaVictims");
    if (!v.ok()) return v.status();
    a.victims = std::move(*v);
  } else if (*full) {
    a.meta = false;
    auto v = ParseVictimsMap(**full, false, "NodeNameToVictims");
    if (!v.ok()) return v.status();
    a.victims = std::move(*v);
  }
  return a;
}

std::string SerializePreemptionResult(const ExtenderPreemptionResult& r) {
  Json m = Json::object();
  for (const auto& [node, v] : r.victims) {
    Json pods = Json::array();
    for (const std::string& uid : v.uids) pods.push_back(Json{{"UID", uid}});
    Json o = Json::object();
    o["Pods"] = std::move(pods);
    o["NumPDBViolations"] = v.num_pdb_violations;
    m[node] = std::move(o);
  }
  Json j = Json::object();
  j["NodeNameToMetaVictims"] = std::move(m);
  return DumpJson(j);
}

absl::StatusOr<ExtenderPreemptionResult> ParsePreemptionResult(absl::string_view body) {
  auto j = ParseJson(body);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return NotObject("ExtenderPreemptionResult", *j);
  ExtenderPreemptionResult r;
  auto meta = JsonObject(*j, "NodeNameToMetaVictims", "ExtenderPreemptionResult");
  if (!meta.ok()) return meta.status();
  if (*meta) {
    auto v = ParseVictimsMap(**meta, true, "NodeNameToMetaVictims");
    if (!v.ok()) return v.status();
    r.victims = std::move(*v);
  }
  return r;
}

}  // namespace topogang
