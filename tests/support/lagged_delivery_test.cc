// LaggedDelivery: callbacks run in order, each at least `lag` after its post, and with a
// per-event cost each event of a burst also waits for the costs of those before it.
#include "tests/support/lagged_delivery.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "absl/time/clock.h"

namespace topogang::testing {
namespace {

struct Ran {
  std::mutex mu;
  std::vector<std::pair<int, absl::Time>> at;  // (callback, when it ran)
};

TEST(LaggedDeliveryTest, AConstantLagDelaysEveryCallbackAlike) {
  Ran ran;
  LaggedDelivery d(absl::Milliseconds(50));
  const absl::Time posted = absl::Now();
  for (int i = 0; i < 20; ++i) {
    d.Post([&ran, i] {
      std::lock_guard<std::mutex> lock(ran.mu);
      ran.at.emplace_back(i, absl::Now());
    });
  }
  ASSERT_TRUE(d.Drain(absl::Seconds(10)));
  ASSERT_EQ(ran.at.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(ran.at[i].first, i) << "out of order";
    EXPECT_GE(ran.at[i].second - posted, absl::Milliseconds(50));
  }
}

TEST(LaggedDeliveryTest, APerEventCostMakesEachEventOfABurstTrailFurther) {
  Ran ran;
  LaggedDelivery d(absl::Milliseconds(50), absl::Milliseconds(10));
  const absl::Time posted = absl::Now();
  for (int i = 0; i < 20; ++i) {
    d.Post([&ran, i] {
      std::lock_guard<std::mutex> lock(ran.mu);
      ran.at.emplace_back(i, absl::Now());
    });
  }
  ASSERT_TRUE(d.Drain(absl::Seconds(10)));
  ASSERT_EQ(ran.at.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(ran.at[i].first, i) << "out of order";
    // The i-th of the burst waits for the lag and for the i events before it.
    EXPECT_GE(ran.at[i].second - posted, absl::Milliseconds(50 + 10 * i)) << i;
  }
}

}  // namespace
}  // namespace topogang::testing
