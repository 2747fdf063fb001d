#include "topology/bitmask.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace topogang {
namespace {

TEST(BitMask, ConstructAllSetCountsOnlyInRange) {
  BitMask m(130, true);
  EXPECT_EQ(m.Count(), 130u);
  EXPECT_TRUE(m.Test(129));
  BitMask z(130, false);
  EXPECT_EQ(z.Count(), 0u);
}

TEST(BitMask, SetClearRangesAcrossWords) {
  BitMask m(200);
  m.SetRange(60, 140, true);
  EXPECT_EQ(m.Count(), 80u);
  EXPECT_FALSE(m.Test(59));
  EXPECT_TRUE(m.Test(60));
  EXPECT_TRUE(m.Test(139));
  EXPECT_FALSE(m.Test(140));
  m.SetRange(64, 128, false);
  EXPECT_EQ(m.Count(), 16u);
  EXPECT_EQ(m.CountRange(0, 64), 4u);
}

// Every range query agrees with a plain vector<bool> on random data.
TEST(BitMask, RandomRangeQueriesMatchReference) {
  std::mt19937 rng(7);
  const size_t n = 1000;
  BitMask a(n), b(n);
  std::vector<bool> ra(n), rb(n);
  for (size_t i = 0; i < n; ++i) {
    ra[i] = rng() & 1;
    rb[i] = rng() % 3 == 0;
    a.Assign(i, ra[i]);
    b.Assign(i, rb[i]);
  }
  for (int t = 0; t < 2000; ++t) {
    size_t x = rng() % (n + 1), y = rng() % (n + 1);
    if (x > y) std::swap(x, y);
    size_t want = 0, want_and = 0, want_next = y;
    for (size_t i = x; i < y; ++i) {
      want += ra[i];
      want_and += ra[i] && rb[i];
      if (ra[i] && rb[i] && want_next == y) want_next = i;
    }
    ASSERT_EQ(a.CountRange(x, y), want) << x << ".." << y;
    ASSERT_EQ(BitMask::CountAndRange(a, b, x, y), want_and);
    ASSERT_EQ(BitMask::FindNextAnd(a, b, x, y), want_next);
  }
}

TEST(BitMask, EmptyRangeIsZero) {
  BitMask m(10, true);
  EXPECT_EQ(m.CountRange(5, 5), 0u);
  EXPECT_EQ(BitMask::FindNextAnd(m, m, 3, 3), 3u);
}

}  // namespace
}  // namespace topogang
