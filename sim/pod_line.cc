#include "sim/pod_line.h"

#include <algorithm>

namespace topogang::sim {

double PodLine::Delay(double now, int pods, double lag_s) {
  if (!on() || pods <= 0) return 0;
  // The pods join after their lag and are taken after what is queued already.
  const double begin = std::max(now + lag_s, busy_until_);
  busy_until_ = begin + pods / pods_per_s_;
  return busy_until_ - now;
}

}  // namespace topogang::sim
