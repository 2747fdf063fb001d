// What the churn test is made of: its nodes and jobs, and the knobs read from the environment
// (tests/kubesched/churn_test.cc says what the test does).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/json_util.h"

namespace topogang::kubesched::churn {

struct NodeSpec {
  std::string name, pool;
  int gpus = 8;
  bool tainted = false;  // dedicated=other:NoSchedule
  bool joined = true;    // false: a node that joins during the churn, not yet created
  Json object;
};

struct Job {
  std::string name;
  bool gang = true;  // false: one pod without gang labels
  int size = 1, gpus = 1;
  std::string pool;  // nodeSelector pool=..., "" for none
  bool tolerates = false;
  std::vector<std::string> members;  // the pods that exist now
  int created = 0;                   // members created so far (pod by pod gangs grow)
  bool repairing = false;            // a member failed; its replacement may not be bound yet
  bool done = false;
};

inline std::vector<uint64_t> Seeds() {
  const char* env = std::getenv("TOPOGANG_CHURN_SEEDS");
  std::vector<uint64_t> out;
  for (absl::string_view s : absl::StrSplit(env ? env : "1,2", ',', absl::SkipEmpty())) {
    out.push_back(std::strtoull(std::string(s).c_str(), nullptr, 10));
  }
  return out;
}

inline int Steps() {
  const char* env = std::getenv("TOPOGANG_CHURN_STEPS");
  return env ? std::atoi(env) : 160;
}

// A watch's lag behind the API server in cluster milliseconds: a constant, plus a cost per
// event (LaggedDelivery: a consumer that slow trails a burst further with every event, then
// drains).
struct WatchLag {
  int ms = 0, per_event_ms = 0;
};
// kube-scheduler's and topogangd's.
struct WatchLags {
  WatchLag scheduler, daemon;
};
inline std::string ToString(const WatchLag& l) {
  return std::to_string(l.ms) + (l.per_event_ms ? "+" + std::to_string(l.per_event_ms) : "");
}
// For gtest's parameter printing.
inline std::ostream& operator<<(std::ostream& os, const WatchLags& l) {
  return os << ToString(l.scheduler) << "/" << ToString(l.daemon);
}

// TOPOGANG_CHURN_WATCH_LAGS_MS: comma-separated "S/D" pairs of kube-scheduler's and topogangd's
// lags, each "ms" or "ms+per_event_ms" (default "0/0,2000/0,0/2000,200+10/200+20": the last is
// a burst, such as a gang's pods created at once, trailing 10 and 20 ms further per event); a
// bare "S" is "S/0".
inline std::vector<WatchLags> WatchLagsMs() {
  const char* env = std::getenv("TOPOGANG_CHURN_WATCH_LAGS_MS");
  auto lag = [](absl::string_view s) {
    std::vector<std::string> two = absl::StrSplit(s, '+');
    return WatchLag{std::atoi(two[0].c_str()), two.size() > 1 ? std::atoi(two[1].c_str()) : 0};
  };
  std::vector<WatchLags> out;
  for (absl::string_view p :
       absl::StrSplit(env ? env : "0/0,2000/0,0/2000,200+10/200+20", ',', absl::SkipEmpty())) {
    std::vector<std::string> two = absl::StrSplit(p, '/');
    out.push_back({lag(two[0]), two.size() > 1 ? lag(two[1]) : WatchLag{}});
  }
  return out;
}

inline int GpusOf(const Json& pod) {
  try {
    return std::stoi(
        pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"].get<std::string>());
  } catch (...) {
    return 0;
  }
}

}  // namespace topogang::kubesched::churn
