#include "sim/jct_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace topogang::sim {
namespace {

// Fluid SRPT over `by_arrival`: each step gets a GPU-second allowance and spends it on the least
// remaining work first. Jobs arriving within a step count from its start.
class FluidSrpt {
 public:
  explicit FluidSrpt(std::vector<BoundJob> by_arrival) : jobs_(std::move(by_arrival)) {}

  // Admits the jobs arriving before `until`, then spends `allowance`.
  void Step(double until, double allowance) {
    for (; next_ < jobs_.size() && jobs_[next_].arrival_s < until; ++next_) {
      remaining_.push(static_cast<double>(jobs_[next_].gpus) * jobs_[next_].duration_s);
    }
    double left = allowance;
    // Rounding may only finish a job early: the bound stays a bound. A job of no work finishes
    // even on no allowance.
    while (!remaining_.empty() && remaining_.top() <= left * (1 + 1e-12) + 1e-9) {
      left = std::max(0.0, left - remaining_.top());
      done_ += remaining_.top();
      remaining_.pop();
      ++finished_;
    }
    if (!remaining_.empty() && left > 0) {
      const double w = remaining_.top();
      remaining_.pop();
      remaining_.push(w - left);
      done_ += left;
    }
  }
  long finished() const { return finished_; }
  double done() const { return done_; }  // GPU-seconds spent

 private:
  const std::vector<BoundJob> jobs_;
  size_t next_ = 0;
  std::priority_queue<double, std::vector<double>, std::greater<>> remaining_;
  long finished_ = 0;
  double done_ = 0;
};

// #{v <= t} over sorted v.
long CountUpTo(const std::vector<double>& sorted, double t) {
  return std::upper_bound(sorted.begin(), sorted.end(), t) - sorted.begin();
}

}  // namespace

absl::StatusOr<double> MeanJctLowerBound(std::vector<BoundJob> jobs, long capacity_gpus,
                                         const JctBoundOptions& options) {
  if (capacity_gpus <= 0) return absl::InvalidArgumentError("capacity must be positive");
  if (!(options.step_s > 0) || !std::isfinite(options.step_s)) {
    return absl::InvalidArgumentError("step must be a positive number of seconds");
  }
  // Beyond kMaxSeconds (31,700 years) sums of times would lose all precision.
  constexpr double kMaxSeconds = 1e12;
  const double W = options.large_max_wait_s;
  if (std::isnan(W) || W < 0 || (std::isfinite(W) && W > kMaxSeconds)) {
    return absl::InvalidArgumentError(
        "the large gangs' longest wait must be >= 0 s and at most 1e12 s (infinite: no promise)");
  }
  for (const BoundJob& j : jobs) {
    if (!(j.arrival_s >= 0 && j.arrival_s <= kMaxSeconds && j.duration_s >= 0 &&
          j.duration_s <= kMaxSeconds)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a job's arrival and duration must be between 0 and 1e12 s (got %g s, %g s)", j.arrival_s,
          j.duration_s));
    }
    if (j.gpus <= 0 || j.gpus > capacity_gpus) {
      return absl::InvalidArgumentError(
          absl::StrFormat("a job of %d GPUs cannot run on %d", j.gpus, capacity_gpus));
    }
  }
  if (jobs.empty()) return 0.0;
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const BoundJob& a, const BoundJob& b) { return a.arrival_s < b.arrival_s; });
  const double cap = static_cast<double>(capacity_gpus);
  const bool promise = std::isfinite(W);
  auto large = [&](const BoundJob& j) { return j.gpus >= options.large_gpus; };

  std::vector<BoundJob> small_jobs;
  std::vector<double> arrivals, end_all, end_small, end_large;
  double work = 0, large_work = 0, last_end = 0, durations = 0;
  for (const BoundJob& j : jobs) {
    if (!large(j)) small_jobs.push_back(j);
    durations += j.duration_s;
    arrivals.push_back(j.arrival_s);
    const double end = j.arrival_s + j.duration_s;
    end_all.push_back(end);
    (large(j) ? end_large : end_small).push_back(end);
    work += static_cast<double>(j.gpus) * j.duration_s;
    if (large(j)) large_work += static_cast<double>(j.gpus) * j.duration_s;
    last_end = std::max(last_end, end + (promise && large(j) ? W : 0));
  }
  for (auto* v : {&end_all, &end_small, &end_large}) std::sort(v->begin(), v->end());

  // By `horizon` everything has arrived, every promise has run its course and the pool has had
  // room for all the work: about horizon / step steps. Widen the step where that is too many.
  const double horizon = last_end + work / cap;
  const double step = std::max(options.step_s, horizon / static_cast<double>(kMaxBoundSteps));

  // allowance[k]: the most GPU-seconds the small jobs may have had by the end of step k under the
  // promise, min over later s of (capacity * s - U(s)); U is piecewise linear, so sampling it at
  // the grid points is exact there, and past the last kink it grows at the pool's rate.
  std::vector<double> allowance;
  if (promise) {
    struct Kink {
      double t, slope;
    };
    std::vector<Kink> kinks;
    for (const BoundJob& j : jobs) {
      if (!large(j) || j.duration_s <= 0) continue;
      kinks.push_back({j.arrival_s + W, static_cast<double>(j.gpus)});
      kinks.push_back({j.arrival_s + W + j.duration_s, -static_cast<double>(j.gpus)});
    }
    std::sort(kinks.begin(), kinks.end(), [](const Kink& a, const Kink& b) { return a.t < b.t; });
    const long n_grid = static_cast<long>(std::ceil(last_end / step)) + 2;
    allowance.resize(n_grid);
    double u = 0, slope = 0, at = 0;
    size_t ki = 0;
    for (long k = 0; k < n_grid; ++k) {
      const double t = static_cast<double>(k) * step;
      for (; ki < kinks.size() && kinks[ki].t <= t; ++ki) {
        u += slope * (kinks[ki].t - at);
        at = kinks[ki].t;
        slope += kinks[ki].slope;
      }
      u += slope * (t - at);
      at = t;
      allowance[k] = cap * t - u;
    }
    for (long k = n_grid - 2; k >= 0; --k) allowance[k] = std::min(allowance[k], allowance[k + 1]);
    if (allowance.front() < -1e-6 * cap) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the gangs of >= %d GPUs cannot all start within %.0f s of arrival even with the %d "
          "GPUs to themselves",
          options.large_gpus, W, capacity_gpus));
    }
  }
  auto allowed_by = [&](long k) {  // at the grid point k
    if (!promise) return cap * static_cast<double>(k) * step;
    if (k < static_cast<long>(allowance.size())) return allowance[k];
    return cap * static_cast<double>(k) * step - large_work;  // past the last kink U is all of it
  };

  FluidSrpt all(jobs);
  FluidSrpt small(std::move(small_jobs));
  const long n = static_cast<long>(jobs.size());
  double pending_s = 0;
  size_t arrived = 0;  // #{arrival <= t0}
  for (long k = 0;; ++k) {
    const double t0 = static_cast<double>(k) * step, t1 = t0 + step;
    all.Step(t1, cap * step);
    small.Step(t1, std::max(0.0, std::min(cap * step, allowed_by(k + 1) - small.done())));
    // Jobs finished by t1, at most; taken as finished from t0.
    const long by_small = std::min(small.finished(), CountUpTo(end_small, t1));
    const long finished =
        std::min({by_small + CountUpTo(end_large, t1), all.finished(), CountUpTo(end_all, t1)});
    if (finished >= n) break;
    // The jobs arrived but not finished, integrated over the step: at least the integral of the
    // arrivals less `finished` for the whole step (Jensen: (x)+ is convex).
    while (arrived < arrivals.size() && arrivals[arrived] <= t0) ++arrived;
    double in_step = step * static_cast<double>(arrived);
    for (size_t i = arrived; i < arrivals.size() && arrivals[i] < t1; ++i) {
      in_step += t1 - arrivals[i];
    }
    pending_s += std::max(0.0, in_step - step * static_cast<double>(finished));
  }
  return std::max(pending_s, durations) / static_cast<double>(n);
}

}  // namespace topogang::sim
