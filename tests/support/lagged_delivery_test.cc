// LaggedDelivery: callbacks run in order, each at least `lag` after its post, and with a
// per-event cost each event of a burst also waits for the costs of those before it.
#include "tests/support/lagged_delivery.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "absl/time/clock.h"

namespace topogang::testing {
namespace {

// Posts `n` callbacks at once and returns how long after the burst each ran, in posting order
// (a callback that ran out of order fails the test).
std::vector<absl::Duration> Burst(LaggedDelivery& d, int n) {
  std::mutex mu;
  std::vector<std::pair<int, absl::Time>> ran;  // (callback, when it ran)
  const absl::Time posted = absl::Now();
  for (int i = 0; i < n; ++i) {
    d.Post([&mu, &ran, i] {
      std::lock_guard<std::mutex> lock(mu);
      ran.emplace_back(i, absl::Now());
    });
  }
  if (!d.Drain(absl::Seconds(10))) {
    d.Stop();  // no callback may outlive `ran`
    ADD_FAILURE() << "the burst was not delivered in 10 s";
  }
  std::lock_guard<std::mutex> lock(mu);
  std::vector<absl::Duration> after;
  for (int i = 0; i < static_cast<int>(ran.size()); ++i) {
    EXPECT_EQ(ran[i].first, i) << "out of order";
    after.push_back(ran[i].second - posted);
  }
  EXPECT_EQ(static_cast<int>(after.size()), n);
  return after;
}

TEST(LaggedDeliveryTest, AConstantLagDelaysEveryCallback) {
  LaggedDelivery d(absl::Milliseconds(50));
  for (absl::Duration after : Burst(d, 20)) EXPECT_GE(after, absl::Milliseconds(50));
}

TEST(LaggedDeliveryTest, APerEventCostMakesEachEventOfABurstTrailFurther) {
  LaggedDelivery d(absl::Milliseconds(50), absl::Milliseconds(10));
  const std::vector<absl::Duration> after = Burst(d, 20);
  for (int i = 0; i < static_cast<int>(after.size()); ++i) {
    // The i-th of the burst waits for the lag and for the i events before it.
    EXPECT_GE(after[i], absl::Milliseconds(50 + 10 * i)) << i;
  }
}

}  // namespace
}  // namespace topogang::testing
