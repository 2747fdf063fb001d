#include "sim/bind_line.h"

#include <algorithm>

namespace topogang::sim {

double BindLine::Delay(double now, int pods) {
  if (!on() || pods <= 0) return 0;
  // The pods join the loop once retried; the loop takes them after what is queued already.
  const double begin = std::max(now + retry_s_, busy_until_);
  busy_until_ = begin + pods / pods_per_s_;
  return busy_until_ - now;
}

}  // namespace topogang::sim
