#include "sim/pod_line.h"

#include <cassert>
#include <iterator>
#include <limits>
#include <vector>

namespace topogang::sim {

double PodLine::Delay(double now, int pods, double lag_s) {
  if (!enabled() || pods <= 0) return 0;
  assert(now >= last_now_);
  last_now_ = now;
  while (!busy_.empty() && busy_.begin()->second <= now) busy_.erase(busy_.begin());
  double t = now + lag_s;
  double need = pods / pods_per_s_;
  // From where it joins, fill the idle gaps between promised time until its pods are served.
  auto next = busy_.upper_bound(t);
  if (next != busy_.begin() && std::prev(next)->second > t) t = std::prev(next)->second;
  std::vector<std::pair<double, double>> taken;
  while (true) {
    const double gap_end =
        next == busy_.end() ? std::numeric_limits<double>::infinity() : next->first;
    if (gap_end - t >= need) {
      taken.push_back({t, t + need});
      break;
    }
    if (gap_end > t) {
      taken.push_back({t, gap_end});
      need -= gap_end - t;
    }
    t = next->second;
    ++next;
  }
  const double done = taken.back().second;
  for (auto [from, to] : taken) {
    // Merge with the promised time it touches on either side.
    auto after = busy_.find(to);
    if (after != busy_.end()) {
      to = after->second;
      busy_.erase(after);
    }
    auto it = busy_.lower_bound(from);
    if (it != busy_.begin() && std::prev(it)->second == from) {
      std::prev(it)->second = to;
    } else {
      busy_[from] = to;
    }
  }
  return done - now;
}

}  // namespace topogang::sim
