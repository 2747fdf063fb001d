#include "sim/trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "scheduler/gang.h"
#include "topology/cluster_spec.h"

namespace topogang::sim {
namespace {

constexpr double kMaxSeconds = 1e9;  // ~31 years: anything beyond is a unit mistake

const std::vector<std::string>& KnownColumns() {
  static const auto* cols = new std::vector<std::string>{
      "id",         "arrival_s",     "members",       "gpus_per_member",
      "duration_s", "comm_fraction", "required_tier", "preferred_tier",
      "sku",        "estimate_s",    "priority",      "min_members"};
  return *cols;
}

bool ValidName(absl::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

class RowError {
 public:
  RowError(absl::string_view source, int line) : prefix_(absl::StrCat(source, ":", line, ": ")) {}
  absl::Status operator()(absl::string_view msg) const {
    return absl::InvalidArgumentError(absl::StrCat(prefix_, msg));
  }

 private:
  std::string prefix_;
};

absl::StatusOr<double> ParseSeconds(absl::string_view field, absl::string_view col,
                                    double min_exclusive_or_eq, bool allow_equal,
                                    const RowError& err) {
  double v;
  if (!absl::SimpleAtod(field, &v) || !std::isfinite(v)) {
    return err(absl::StrCat(col, ": expected a number, got '", field, "'"));
  }
  if (v < min_exclusive_or_eq || (!allow_equal && v == min_exclusive_or_eq) || v > kMaxSeconds) {
    return err(absl::StrCat(col, ": ", field, " out of range (", allow_equal ? ">= " : "> ",
                            min_exclusive_or_eq, ", <= 1e9)"));
  }
  return v;
}

absl::StatusOr<int> ParseInt(absl::string_view field, absl::string_view col, int lo, int hi,
                             const RowError& err) {
  int v;
  if (!absl::SimpleAtoi(field, &v)) {
    return err(absl::StrCat(col, ": expected an integer, got '", field, "'"));
  }
  if (v < lo || v > hi) {
    return err(absl::StrCat(col, ": ", v, " out of range [", lo, ", ", hi, "]"));
  }
  return v;
}

std::string FormatNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.10g", v);
}

}  // namespace

absl::StatusOr<Trace> ParseTraceCsv(absl::string_view text, absl::string_view source) {
  Trace trace;
  std::map<std::string, int> col;  // column name -> index
  size_t num_cols = 0;
  std::set<std::string> ids;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    RowError err(source, line_no);
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    for (auto& x : f) x = absl::StripAsciiWhitespace(x);
    if (col.empty()) {  // the header
      for (size_t i = 0; i < f.size(); ++i) {
        std::string name(f[i]);
        const auto& known = KnownColumns();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          return err(absl::StrCat("header: unknown column '", name,
                                  "' (known: ", absl::StrJoin(known, ", "), ")"));
        }
        if (!col.emplace(name, static_cast<int>(i)).second) {
          return err(absl::StrCat("header: duplicate column '", name, "'"));
        }
      }
      for (const char* need : {"id", "arrival_s", "members", "gpus_per_member", "duration_s"}) {
        if (!col.count(need)) return err(absl::StrCat("header: missing column '", need, "'"));
      }
      num_cols = f.size();
      continue;
    }
    if (f[0].size() > 1 && f[0][0] == '@') {  // node event row
      NodeEvent ev;
      ev.line = line_no;
      if (f[0] == "@fail") {
        ev.kind = NodeEvent::Kind::kFail;
      } else if (f[0] == "@drain") {
        ev.kind = NodeEvent::Kind::kDrain;
      } else if (f[0] == "@slow") {
        ev.kind = NodeEvent::Kind::kSlow;
      } else {
        return err(absl::StrCat("unknown event '", f[0], "' (known: @fail, @drain, @slow)"));
      }
      if (f.size() < 3 || f.size() > 4) {
        return err(absl::StrCat(f[0], ": expected ", f[0], ",TIME_S,NODE[,DURATION_S], got ",
                                f.size(), " fields"));
      }
      auto t = ParseSeconds(f[1], "time_s", 0, true, err);
      if (!t.ok()) return t.status();
      ev.time_s = *t;
      if (!ValidName(f[2])) return err(absl::StrCat("node: invalid node name '", f[2], "'"));
      ev.node = std::string(f[2]);
      if (f.size() == 4 && !f[3].empty()) {
        auto d = ParseSeconds(f[3], "duration_s", 0, true, err);
        if (!d.ok()) return d.status();
        ev.duration_s = *d;
      }
      trace.events.push_back(std::move(ev));
      continue;
    }
    if (f.size() != num_cols) {
      return err(absl::StrCat("expected ", num_cols, " fields like the header, got ", f.size()));
    }
    if (trace.jobs.size() >= static_cast<size_t>(kMaxTraceJobs)) {
      return err(absl::StrCat("more than ", kMaxTraceJobs, " jobs"));
    }
    TraceJob j;
    j.line = line_no;
    absl::string_view id = f[col["id"]];
    if (!ValidName(id)) {
      return err(absl::StrCat("id: invalid job id '", id,
                              "' (1-128 characters of letters, digits, - _ .)"));
    }
    j.id = std::string(id);
    if (!ids.insert(j.id).second) return err(absl::StrCat("id: duplicate job id '", id, "'"));
    auto arrival = ParseSeconds(f[col["arrival_s"]], "arrival_s", 0, true, err);
    if (!arrival.ok()) return arrival.status();
    j.arrival_s = *arrival;
    auto members = ParseInt(f[col["members"]], "members", 1, kMaxGangMembers, err);
    if (!members.ok()) return members.status();
    j.members = *members;
    auto gpus = ParseInt(f[col["gpus_per_member"]], "gpus_per_member", 1, kMaxGpusPerNode, err);
    if (!gpus.ok()) return gpus.status();
    j.gpus_per_member = *gpus;
    auto dur = ParseSeconds(f[col["duration_s"]], "duration_s", 0, false, err);
    if (!dur.ok()) return dur.status();
    j.duration_s = *dur;
    if (col.count("comm_fraction") && !f[col["comm_fraction"]].empty()) {
      absl::string_view s = f[col["comm_fraction"]];
      double v;
      if (!absl::SimpleAtod(s, &v) || !std::isfinite(v) || v < 0 || v > 1) {
        return err(absl::StrCat("comm_fraction: expected a number in [0, 1], got '", s, "'"));
      }
      j.comm_fraction = v;
    }
    for (const char* c : {"required_tier", "preferred_tier"}) {
      if (!col.count(c)) continue;
      absl::string_view s = f[col[c]];
      if (!s.empty() && !ValidName(s)) return err(absl::StrCat(c, ": invalid tier name '", s, "'"));
      (std::string(c) == "required_tier" ? j.required_tier : j.preferred_tier) = std::string(s);
    }
    if (col.count("sku") && !f[col["sku"]].empty()) {
      if (!ValidName(f[col["sku"]])) {
        return err(absl::StrCat("sku: invalid GPU model name '", f[col["sku"]], "'"));
      }
      j.sku = std::string(f[col["sku"]]);
    }
    if (col.count("estimate_s") && !f[col["estimate_s"]].empty()) {
      auto e = ParseSeconds(f[col["estimate_s"]], "estimate_s", 0, true, err);
      if (!e.ok()) return e.status();
      j.estimate_s = *e;
    }
    if (col.count("priority") && !f[col["priority"]].empty()) {
      auto p = ParseInt(f[col["priority"]], "priority", -1000000000, 1000000000, err);
      if (!p.ok()) return p.status();
      j.priority = *p;
    }
    if (col.count("min_members") && !f[col["min_members"]].empty()) {
      auto m = ParseInt(f[col["min_members"]], "min_members", 1, j.members, err);
      if (!m.ok()) return m.status();
      j.min_members = *m;
    }
    trace.jobs.push_back(std::move(j));
  }
  if (col.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": empty trace (no header row)"));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.arrival_s < b.arrival_s; });
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const NodeEvent& a, const NodeEvent& b) { return a.time_s < b.time_s; });
  return trace;
}

std::string WriteTraceCsv(const Trace& trace) {
  std::string out = absl::StrCat(absl::StrJoin(KnownColumns(), ","), "\n");
  for (const TraceJob& j : trace.jobs) {
    absl::StrAppend(&out, j.id, ",", FormatNumber(j.arrival_s), ",", j.members, ",",
                    j.gpus_per_member, ",", FormatNumber(j.duration_s), ",",
                    FormatNumber(j.comm_fraction), ",", j.required_tier, ",", j.preferred_tier, ",",
                    j.sku, ",", j.estimate_s > 0 ? FormatNumber(j.estimate_s) : "", ",",
                    j.priority != 0 ? absl::StrCat(j.priority) : "", ",",
                    j.min_members > 0 ? absl::StrCat(j.min_members) : "", "\n");
  }
  for (const NodeEvent& e : trace.events) {
    absl::StrAppend(&out,
                    e.kind == NodeEvent::Kind::kFail    ? "@fail,"
                    : e.kind == NodeEvent::Kind::kDrain ? "@drain,"
                                                        : "@slow,",
                    FormatNumber(e.time_s), ",", e.node);
    if (e.duration_s > 0) absl::StrAppend(&out, ",", FormatNumber(e.duration_s));
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace topogang::sim
