#include "daemon/slow_nodes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace topogang {

void SlowNodes::SetOptions(SlownessOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  book_ = NodeSlowness(options);  // scores restart; options are set once, at start
}

SlownessOptions SlowNodes::options() const {
  std::lock_guard<std::mutex> lock(mu_);
  return book_.options();
}

bool SlowNodes::Report(const std::string& node, SlownessSignal signal, absl::Time now,
                       double magnitude) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(node);
  if (it == ids_.end()) {
    if (ids_.size() >= kMaxNodes) {
      book_.Prune(now);
      return false;
    }
    it = ids_.emplace(node, static_cast<int>(names_.size())).first;
    names_.push_back(node);
  }
  const bool was = book_.IsSlow(it->second, now);
  book_.Report(it->second, signal, now, magnitude);
  return !was && book_.IsSlow(it->second, now);
}

double SlowNodes::Score(const std::string& node, absl::Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(node);
  return it == ids_.end() ? 0 : book_.Score(it->second, now);
}

std::vector<std::string> SlowNodes::Slow(absl::Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (int id : book_.SlowNodes(now)) out.push_back(names_[id]);
  std::sort(out.begin(), out.end());
  return out;
}

std::string SlowNodes::Describe(const std::string& node, absl::Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(node);
  if (it == ids_.end()) return "";
  const double score = book_.Score(it->second, now);
  if (score < 1e-3) return "";
  std::string parts;
  const auto b = book_.Breakdown(it->second, now);
  for (int i = 0; i < kNumSlownessSignals; ++i) {
    if (b[i] < 1e-3) continue;
    absl::StrAppend(&parts, parts.empty() ? "" : ", ",
                    SlownessSignalName(static_cast<SlownessSignal>(i)),
                    absl::StrFormat(" %.2f", b[i]));
  }
  return absl::StrFormat("%.2f (%s)", score, parts);
}

}  // namespace topogang
