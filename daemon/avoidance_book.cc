#include "daemon/avoidance_book.h"

#include "absl/strings/str_cat.h"

namespace topogang {

void AvoidanceBook::Record(const std::string& gang, std::vector<Node> nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nodes.empty()) {
    gangs_.erase(gang);
    return;
  }
  if (gangs_.size() >= kMaxGangs && !gangs_.contains(gang)) gangs_.clear();
  gangs_[gang] = std::move(nodes);
}

std::vector<AvoidanceBook::Node> AvoidanceBook::For(const std::string& gang) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gangs_.find(gang);
  return it == gangs_.end() ? std::vector<Node>{} : it->second;
}

void AvoidanceBook::set_slow_gang_gpus(long gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  slow_gang_gpus_ = gpus;
}

long AvoidanceBook::slow_gang_gpus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slow_gang_gpus_;
}

std::string SlowNodeReason(const std::string& score, long slow_gang_gpus) {
  return absl::StrCat("slow: score ", score, "; gangs of ", slow_gang_gpus,
                      "+ GPUs avoid slow nodes");
}

}  // namespace topogang
