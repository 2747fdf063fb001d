#include "kube/queue_arrivals.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"

namespace topogang {
namespace {

constexpr int kVersion = 1;
constexpr const char* kOverloadKey = "large_overload_seen";
constexpr size_t kMaxName = 512;  // namespace (63) + "/" + a gang name, with room to spare
const absl::Time kEarliest = absl::FromUnixSeconds(946684800);  // 2000-01-01
const absl::Time kLatest = absl::FromUnixSeconds(7258118400);   // 2200-01-01

using Entries = std::vector<std::pair<std::string, QueueSeniority>>;

// Oldest first, ties by name.
void SortByArrival(Entries* v) {
  std::sort(v->begin(), v->end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.arrival, a.first) < std::tie(b.second.arrival, b.first);
  });
}

// One entry as the journal writes it: `"name":ms`, or an object when a patience start is known.
std::string EncodeEntry(const std::string& name, const QueueSeniority& s) {
  std::string out;
  AppendJsonString(&out, name);
  if (s.could_start == absl::InfiniteFuture() && s.thin_since == absl::InfiniteFuture()) {
    absl::StrAppend(&out, ":", absl::ToUnixMillis(s.arrival));
    return out;
  }
  absl::StrAppend(&out, ":{\"at\":", absl::ToUnixMillis(s.arrival));
  if (s.could_start != absl::InfiniteFuture()) {
    absl::StrAppend(&out, ",\"could_start\":", absl::ToUnixMillis(s.could_start));
  }
  if (s.thin_since != absl::InfiniteFuture()) {
    absl::StrAppend(&out, ",\"thin_since\":", absl::ToUnixMillis(s.thin_since));
  }
  out += '}';
  return out;
}

// A time the journal may hold, or nullopt.
std::optional<absl::Time> TimeOf(const Json& v) {
  if (!v.is_number_integer()) return std::nullopt;
  const absl::Time t = absl::FromUnixMillis(v.get<int64_t>());
  if (t < kEarliest || t > kLatest) return std::nullopt;
  return t;
}

// An entry's value (a number, or an object with "at" and optional patience starts); nullopt when
// malformed.
std::optional<QueueSeniority> EntryOf(const Json& value) {
  QueueSeniority s;
  if (!value.is_object()) {
    auto at = TimeOf(value);
    if (!at) return std::nullopt;
    s.arrival = *at;
    return s;
  }
  auto at = value.find("at");
  if (at == value.end()) return std::nullopt;
  auto t = TimeOf(*at);
  if (!t) return std::nullopt;
  s.arrival = *t;
  for (auto [key, field] :
       {std::pair{"could_start", &s.could_start}, std::pair{"thin_since", &s.thin_since}}) {
    auto it = value.find(key);
    if (it == value.end()) continue;
    auto when = TimeOf(*it);
    if (!when) return std::nullopt;
    *field = *when;
  }
  return s;
}

}  // namespace

std::string EncodeQueueJournal(const QueueMemory& memory, size_t max_entries) {
  Entries v(memory.arrivals.begin(), memory.arrivals.end());
  SortByArrival(&v);
  std::vector<std::string> kept;  // the oldest that fit both caps
  size_t bytes = 64;              // the envelope, with room to spare
  for (const auto& [name, s] : v) {
    if (kept.size() >= max_entries) break;
    std::string entry = EncodeEntry(name, s);
    if (bytes + entry.size() + 1 > kMaxJournalBytes) break;
    bytes += entry.size() + 1;
    kept.push_back(std::move(entry));
  }
  std::sort(kept.begin(), kept.end());  // by name: the same queue always gives the same text
  std::string out = absl::StrCat("{\"version\":", kVersion);
  if (memory.large_overload_seen != absl::InfinitePast()) {
    const absl::Duration since_epoch = memory.large_overload_seen - absl::UnixEpoch();
    absl::StrAppend(&out, ",\"", kOverloadKey,
                    "\":", absl::ToInt64Milliseconds(absl::Floor(since_epoch, absl::Minutes(1))));
  }
  absl::StrAppend(&out, ",\"arrivals\":{");
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i > 0) out += ',';
    out += kept[i];
  }
  out += "}}";
  return out;
}

absl::StatusOr<QueueMemory> ParseQueueJournal(absl::string_view text,
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
  QueueMemory memory;
  if (auto seen = json->find(kOverloadKey); seen != json->end()) {
    if (auto t = TimeOf(*seen)) {
      memory.large_overload_seen = *t;
    } else if (warnings) {
      warnings->push_back(absl::StrCat("queue journal: ignored ", kOverloadKey,
                                       ": not Unix milliseconds in range"));
    }
  }
  if (*arrivals == nullptr) return memory;
  std::map<std::string, QueueSeniority>& out = memory.arrivals;
  for (const auto& [name, value] : (*arrivals)->items()) {
    if (name.empty() || name.size() > kMaxName) {
      if (warnings) warnings->push_back("queue journal: skipped an entry with a bad gang name");
      continue;
    }
    std::optional<QueueSeniority> s = EntryOf(value);
    if (!s) {
      if (warnings) {
        warnings->push_back(absl::StrCat("queue journal: skipped '", name,
                                         "': its times are not Unix milliseconds in range"));
      }
      continue;
    }
    out[name] = *s;
  }
  if (out.size() > max_entries) {
    if (warnings) {
      warnings->push_back(
          absl::StrCat("queue journal: ", out.size(), " entries, kept the oldest ", max_entries));
    }
    Entries v(out.begin(), out.end());
    SortByArrival(&v);
    v.resize(max_entries);
    out = std::map<std::string, QueueSeniority>(v.begin(), v.end());
  }
  return memory;
}

}  // namespace topogang
