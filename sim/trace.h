// A job trace for the simulator: gangs arriving over time plus optional node events (failures,
// drains). Parsed from CSV (docs/traces.md); every malformed row is an error naming its line.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topogang::sim {

inline constexpr double kDefaultCommFraction = 0.3;
inline constexpr int kMaxTraceJobs = 1000000;

struct TraceJob {
  std::string id;
  double arrival_s = 0;
  int members = 1;
  int gpus_per_member = 1;
  double duration_s = 0;  // on an ideal placement
  double comm_fraction = kDefaultCommFraction;
  std::string required_tier;
  std::string preferred_tier;
  std::string sku;        // GPU model all members must share; "" = any one model
  double estimate_s = 0;  // the user's run-time estimate (time limit); 0 = none given
  int priority = 0;       // pod priority (higher first)
  // Elastic gangs: the fewest members the job can start with; `members` is then its maximum.
  // 0 = rigid (exactly `members`). Only policies told to run elastic gangs read it.
  int min_members = 0;
  int line = 0;  // source line, for error messages

  long total_gpus() const { return static_cast<long>(members) * gpus_per_member; }
  bool elastic() const { return min_members > 0 && min_members < members; }
};

// kSlow: the node turns slow at time_s (a job with a member on it runs SimOptions::slow_factor
// times slower) and is back to speed after duration_s (<= 0: never).
// A node goes down at time_s (kFail: running work on it is lost; kDrain: cordoned, running work
// finishes) and comes back after duration_s (<= 0: never).
struct NodeEvent {
  enum class Kind { kFail, kDrain, kSlow };
  Kind kind = Kind::kFail;
  double time_s = 0;
  std::string node;
  double duration_s = 0;
  int line = 0;
};

struct Trace {
  std::vector<TraceJob> jobs;  // sorted by arrival (stable)
  std::vector<NodeEvent> events;
};

// Parses the CSV text. `source` names the file in errors ("trace.csv:12: ...").
absl::StatusOr<Trace> ParseTraceCsv(absl::string_view text, absl::string_view source);

// The CSV form ParseTraceCsv reads back to an equal trace.
std::string WriteTraceCsv(const Trace& trace);

}  // namespace topogang::sim
