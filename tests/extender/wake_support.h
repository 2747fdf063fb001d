// What the wake tests share: a recorder of the ledger's wakes, ledger options with a fast
// worker, gang pods, and expiring every reservation.
#pragma once

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "tests/support/service_fixture.h"
#include "tests/support/test_util.h"

namespace topogang::testing {

// Records the ledger's wakes (gang, node).
struct Wakes {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> got;
  WakeFn Fn() {
    return [this](const std::string& node, const std::string& gang) {
      std::lock_guard<std::mutex> lock(mu);
      got.emplace_back(gang, node);
    };
  }
  std::vector<std::pair<std::string, std::string>> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return got;
  }
  // Waits (real time: the ledger's worker) until something was woken.
  bool Wait(absl::Duration limit = absl::Seconds(10)) {
    for (absl::Time end = absl::Now() + limit; absl::Now() < end;) {
      if (!Get().empty()) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }
};

// A fast worker (20 ms ticks and sweeps), a 10 s bind window, and the queue run by itself
// every `queue_pass`.
inline GangLedgerOptions WakeOptions(absl::Duration queue_pass) {
  GangLedgerOptions o = ServiceFixture::Options(absl::Seconds(10), {});
  o.queue_pass = queue_pass;
  return o;
}

// Member i of a 2 x 8-GPU gang.
inline Json WakePod(const std::string& gang, int i) { return MakePod(GangPod(gang, 2, i, 8)); }

// Past every reservation's TTL; waits (real time: the worker's sweep) until none is left.
inline void ExpireEveryReservation(ServiceFixture& f) {
  f.clock.Advance(f.state.With([](GangScheduler& s) { return s.options().reservation_ttl; }) +
                  absl::Seconds(1));
  for (absl::Time end = absl::Now() + absl::Seconds(10);
       f.ledger.GetStats().reserved_gangs > 0 && absl::Now() < end;) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(f.ledger.GetStats().reserved_gangs, 0) << "the reservation did not expire";
}

}  // namespace topogang::testing
