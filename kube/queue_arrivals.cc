#include "kube/queue_arrivals.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"

namespace topogang {
namespace {

constexpr int kVersion = 1;
constexpr size_t kMaxName = 512;  // namespace (63) + "/" + a gang name, with room to spare
const absl::Time kEarliest = absl::FromUnixSeconds(946684800);  // 2000-01-01
const absl::Time kLatest = absl::FromUnixSeconds(7258118400);   // 2200-01-01

// The oldest `max_entries` of `arrivals`, ties by name.
std::vector<std::pair<std::string, absl::Time>> Oldest(
    const std::map<std::string, absl::Time>& arrivals, size_t max_entries) {
  std::vector<std::pair<std::string, absl::Time>> v(arrivals.begin(), arrivals.end());
  if (v.size() > max_entries) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(max_entries), v.end(),
                     [](const auto& a, const auto& b) {
                       return std::tie(a.second, a.first) < std::tie(b.second, b.first);
                     });
    v.resize(max_entries);
  }
  return v;
}

}  // namespace

std::string EncodeArrivals(const std::map<std::string, absl::Time>& arrivals, size_t max_entries) {
  auto kept = Oldest(arrivals, max_entries);
  std::sort(kept.begin(), kept.end());  // by name: the same queue always gives the same text
  std::string out = absl::StrCat("{\"version\":", kVersion, ",\"arrivals\":{");
  bool first = true;
  for (const auto& [name, t] : kept) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(&out, name);
    absl::StrAppend(&out, ":", absl::ToUnixMillis(t));
  }
  out += "}}";
  return out;
}

absl::StatusOr<std::map<std::string, absl::Time>> ParseArrivals(absl::string_view text,
                                                                std::vector<std::string>* warnings,
                                                                size_t max_entries) {
  auto json = ParseJson(text);
  if (!json.ok()) return json.status();
  if (!json->is_object()) return absl::InvalidArgumentError("queue journal: not a JSON object");
  auto version = JsonInt(*json, "version", "queue journal.version");
  if (!version.ok()) return version.status();
  if (*version != kVersion) {
    return absl::InvalidArgumentError(absl::StrCat("queue journal: version ", *version,
                                                   " (this topogangd reads ", kVersion, ")"));
  }
  auto arrivals = JsonObject(*json, "arrivals", "queue journal.arrivals");
  if (!arrivals.ok()) return arrivals.status();
  std::map<std::string, absl::Time> out;
  if (*arrivals == nullptr) return out;
  for (const auto& [name, value] : (*arrivals)->items()) {
    if (name.empty() || name.size() > kMaxName) {
      if (warnings) warnings->push_back("queue journal: skipped an entry with a bad gang name");
      continue;
    }
    const absl::Time t = value.is_number_integer() ? absl::FromUnixMillis(value.get<int64_t>())
                                                   : absl::InfinitePast();
    if (t < kEarliest || t > kLatest) {
      if (warnings) {
        warnings->push_back(absl::StrCat("queue journal: skipped '", name,
                                         "': its arrival is not Unix milliseconds in range"));
      }
      continue;
    }
    out[name] = t;
  }
  if (out.size() > max_entries) {
    if (warnings) {
      warnings->push_back(
          absl::StrCat("queue journal: ", out.size(), " entries, kept the oldest ", max_entries));
    }
    auto kept = Oldest(out, max_entries);
    out = std::map<std::string, absl::Time>(kept.begin(), kept.end());
  }
  return out;
}

}  // namespace topogang
