// A strict reader of the Prometheus text exposition format (version 0.0.4), for tests: checks
// what a real scraper (and promtool check metrics) would reject, and returns every sample for
// value assertions. Written from the format spec, independently of prometheus-cpp's serializer,
// so a serializer or wiring bug shows up as a parse error here.
//
// Checked: line grammar (# HELP / # TYPE / comments / samples, optional timestamp), metric and
// label names, label value escapes, float values (incl. +Inf, -Inf, NaN), at most one HELP and one
// TYPE per family with TYPE before its samples, a family's samples contiguous, no duplicate
// series, known types, and per histogram series: only _bucket/_sum/_count samples, an le label
// on every bucket, le strictly increasing, counts non-decreasing, a final le="+Inf" whose count
// equals _count.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace topogang::testing {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string type;  // counter, gauge, histogram, summary, untyped
  std::string help;
};

class PromText {
 public:
  static absl::StatusOr<PromText> Parse(absl::string_view text);

  const std::vector<PromSample>& samples() const { return samples_; }
  const std::map<std::string, PromFamily>& families() const { return families_; }

  // The value of the sample with exactly these labels, nullopt when there is none.
  std::optional<double> Value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const {
    auto it = index_.find(Key(name, labels));
    if (it == index_.end()) return std::nullopt;
    return samples_[it->second].value;
  }
  // Value(), or NaN when missing (reads well in EXPECT_EQ: a missing series fails it).
  double Get(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    return Value(name, labels).value_or(std::nan(""));
  }

 private:
  static std::string Key(const std::string& name, const std::map<std::string, std::string>& l) {
    std::string k = name + "{";
    for (const auto& [n, v] : l) absl::StrAppend(&k, n, "=\"", v, "\",");
    return k + "}";
  }
  static bool IsMetricName(absl::string_view s) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
      if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
  }
  static bool IsLabelName(absl::string_view s) {
    if (s.empty() || s.find(':') != absl::string_view::npos) return false;
    return IsMetricName(s);
  }
  // Go's strconv.ParseFloat subset the format allows.
  static std::optional<double> ParseFloat(absl::string_view s) {
    if (s == "+Inf" || s == "Inf") return HUGE_VAL;
    if (s == "-Inf") return -HUGE_VAL;
    if (s == "NaN") return std::nan("");
    if (s.empty()) return std::nullopt;
    for (char c : s) {
      if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
        return std::nullopt;
      }
    }
    std::string copy(s);
    char* end = nullptr;
    double v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return std::nullopt;
    return v;
  }
  // The family a sample belongs to: histogram/summary samples carry suffixes.
  std::string FamilyOf(const std::string& name) const {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string suf = suffix;
      if (name.size() > suf.size() &&
          name.compare(name.size() - suf.size(), suf.size(), suf) == 0) {
        std::string base = name.substr(0, name.size() - suf.size());
        auto it = families_.find(base);
        if (it != families_.end() && (it->second.type == "histogram" ||
                                      (it->second.type == "summary" && suf != "_bucket"))) {
          return base;
        }
      }
    }
    return name;
  }
  absl::Status CheckHistograms() const;

  std::vector<PromSample> samples_;
  std::map<std::string, PromFamily> families_;
  std::map<std::string, size_t> index_;  // Key -> samples_ index
};

inline absl::StatusOr<PromText> PromText::Parse(absl::string_view text) {
  PromText out;
  if (!text.empty() && text.back() != '\n') {
    return absl::InvalidArgumentError("the exposition must end with a newline");
  }
  std::set<std::string> help_seen, type_seen, closed;
  std::string current;  // family of the previous sample
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    auto fail = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", why, ": ", line));
    };
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(' ', 3));
      if (f.size() < 3 || f[0] != "#" || (f[1] != "HELP" && f[1] != "TYPE")) continue;  // comment
      const std::string name(f[2]);
      if (!IsMetricName(name)) return fail("bad metric name");
      if (closed.count(name) || (current == name)) {
        return fail("HELP/TYPE after the family's samples");
      }
      if (f[1] == "HELP") {
        if (!help_seen.insert(name).second) return fail("second HELP");
        out.families_[name].help = f.size() > 3 ? std::string(f[3]) : "";
      } else {
        if (f.size() != 4) return fail("TYPE without a type");
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (!kTypes.count(std::string(f[3]))) return fail("unknown type");
        if (!type_seen.insert(name).second) return fail("second TYPE");
        out.families_[name].type = std::string(f[3]);
      }
      continue;
    }
    // name [{labels}] value [timestamp]
    PromSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = std::string(line.substr(0, i));
    if (!IsMetricName(s.name)) return fail("bad metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      for (;;) {
        while (i < line.size() && line[i] == ' ') ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        size_t b = i;
        while (i < line.size() && line[i] != '=' && line[i] != ' ') ++i;
        const std::string label(line.substr(b, i - b));
        if (!IsLabelName(label)) return fail("bad label name");
        if (label.rfind("__", 0) == 0) return fail("reserved label name");
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
          return fail("expected =\" after a label name");
        }
        i += 2;
        std::string value;
        bool closed_quote = false;
        while (i < line.size()) {
          char c = line[i++];
          if (c == '"') {
            closed_quote = true;
            break;
          }
          if (c == '\\') {
            if (i >= line.size()) break;
            char e = line[i++];
            if (e == 'n') {
              value += '\n';
            } else if (e == '\\' || e == '"') {
              value += e;
            } else {
              return fail("bad escape in a label value");
            }
          } else {
            value += c;
          }
        }
        if (!closed_quote) return fail("unterminated label value");
        if (!s.labels.emplace(label, value).second) return fail("repeated label");
        if (i < line.size() && line[i] == ',') {
          ++i;
          continue;
        }
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        return fail("expected , or } after a label");
      }
    }
    if (i >= line.size() || line[i] != ' ') return fail("expected a space before the value");
    std::vector<absl::string_view> rest =
        absl::StrSplit(line.substr(i + 1), ' ', absl::SkipEmpty());
    if (rest.empty() || rest.size() > 2) return fail("expected a value and an optional timestamp");
    auto v = ParseFloat(rest[0]);
    if (!v) return fail("bad value");
    s.value = *v;
    if (rest.size() == 2) {
      for (char c : rest[1]) {
        if (!((c >= '0' && c <= '9') || c == '-')) return fail("bad timestamp");
      }
    }
    const std::string family = out.FamilyOf(s.name);
    if (family != current) {
      if (!current.empty()) closed.insert(current);
      if (closed.count(family)) return fail("family's samples are not contiguous");
      current = family;
    }
    auto fam = out.families_.find(family);
    const std::string type = fam == out.families_.end() ? "untyped" : fam->second.type;
    if (type == "histogram" && s.name == family) return fail("histogram sample without a suffix");
    if (type != "histogram" && s.labels.count("le") && type != "untyped") {
      return fail("le label outside a histogram");
    }
    if (type == "counter" && !(s.value >= 0)) {
      return fail("counter not a non-negative number");
    }
    const std::string key = Key(s.name, s.labels);
    if (!out.index_.emplace(key, out.samples_.size()).second) return fail("duplicate series");
    out.samples_.push_back(std::move(s));
  }
  if (absl::Status st = out.CheckHistograms(); !st.ok()) return st;
  return out;
}

inline absl::Status PromText::CheckHistograms() const {
  for (const auto& [name, fam] : families_) {
    if (fam.type != "histogram") continue;
    // Per series (labels without le): buckets in order of appearance, sum and count.
    struct Series {
      std::vector<std::pair<double, double>> buckets;  // le, count
      std::optional<double> sum, count;
    };
    std::map<std::string, Series> series;
    for (const PromSample& s : samples_) {
      if (FamilyOf(s.name) != name) continue;
      auto labels = s.labels;
      std::optional<double> le;
      if (s.name == name + "_bucket") {
        auto it = labels.find("le");
        if (it == labels.end()) return absl::InvalidArgumentError(name + "_bucket without le");
        le = ParseFloat(it->second);
        if (!le) return absl::InvalidArgumentError(name + ": bad le " + it->second);
        labels.erase(it);
      }
      Series& ser = series[Key(name, labels)];
      if (le) {
        ser.buckets.emplace_back(*le, s.value);
      } else if (s.name == name + "_sum") {
        ser.sum = s.value;
      } else {
        ser.count = s.value;
      }
    }
    if (series.empty()) return absl::InvalidArgumentError(name + ": histogram without samples");
    for (const auto& [key, ser] : series) {
      if (ser.buckets.empty() || !ser.sum || !ser.count) {
        return absl::InvalidArgumentError(key + ": needs buckets, _sum and _count");
      }
      for (size_t i = 1; i < ser.buckets.size(); ++i) {
        if (!(ser.buckets[i].first > ser.buckets[i - 1].first)) {
          return absl::InvalidArgumentError(key + ": le not increasing");
        }
        if (ser.buckets[i].second < ser.buckets[i - 1].second) {
          return absl::InvalidArgumentError(key + ": bucket counts decrease");
        }
      }
      if (!std::isinf(ser.buckets.back().first) || ser.buckets.back().first < 0) {
        return absl::InvalidArgumentError(key + ": no le=\"+Inf\" bucket last");
      }
      if (ser.buckets.back().second != *ser.count) {
        return absl::InvalidArgumentError(key + ": +Inf bucket differs from _count");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace topogang::testing
