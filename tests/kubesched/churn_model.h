// What the churn test is made of: its nodes and jobs, and the knobs read from the environment
// (tests/kubesched/churn_test.cc says what the test does).
#pragma once

#include <cstdint>
#include <cstdlib>
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

// (kube-scheduler's, topogangd's) watch lag behind the API server in cluster milliseconds:
// TOPOGANG_CHURN_WATCH_LAGS_MS, comma-separated "S/D" pairs (default "0/0,2000/0,0/2000"); a bare
// "S" is "S/0".
inline std::vector<std::pair<int, int>> WatchLagsMs() {
  const char* env = std::getenv("TOPOGANG_CHURN_WATCH_LAGS_MS");
  std::vector<std::pair<int, int>> out;
  for (absl::string_view p :
       absl::StrSplit(env ? env : "0/0,2000/0,0/2000", ',', absl::SkipEmpty())) {
    std::vector<std::string> two = absl::StrSplit(p, '/');
    out.emplace_back(std::atoi(two[0].c_str()), two.size() > 1 ? std::atoi(two[1].c_str()) : 0);
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
