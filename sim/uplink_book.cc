#include "sim/uplink_book.h"

#include <algorithm>

namespace topogang::sim {

void UplinkBook::Add(int job, const UplinkLoad& use) {
  Remove(job);
  use_[job] = use;
  for (const auto& [d, g] : use) {
    load_[d] += g;
    users_[d].insert(job);
    changed_.insert(d);
  }
}

void UplinkBook::Remove(int job) {
  for (const auto& [d, g] : use_[job]) {
    if ((load_[d] -= g) == 0) load_.erase(d);
    auto it = users_.find(d);
    it->second.erase(job);
    if (it->second.empty()) users_.erase(it);
    changed_.insert(d);
  }
  use_[job].clear();
}

std::vector<int> UplinkBook::TakeAffected() {
  std::vector<int> out;
  for (int d : changed_) {
    if (auto it = users_.find(d); it != users_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
    }
  }
  changed_.clear();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace topogang::sim
