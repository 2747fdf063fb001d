// UplinkBook: the load jobs put on shared uplinks, and who must be re-priced when it changes.
#include "sim/uplink_book.h"

#include <gtest/gtest.h>

#include <vector>

namespace topogang::sim {
namespace {

TEST(UplinkBook, LoadFollowsTheJobsRunning) {
  UplinkBook book(4);
  book.Add(2, {{10, 8}, {11, 16}});
  book.Add(0, {{10, 4}});
  EXPECT_EQ(book.load(), (UplinkLoad{{10, 12}, {11, 16}}));
  book.Remove(2);
  EXPECT_EQ(book.load(), (UplinkLoad{{10, 4}}));
  book.Remove(2);  // holds nothing any more: no change
  book.Remove(1);  // never held anything
  EXPECT_EQ(book.load(), (UplinkLoad{{10, 4}}));
  book.Remove(0);
  EXPECT_TRUE(book.load().empty());
}

TEST(UplinkBook, AffectedAreTheRunningJobsOnAChangedDomainInJobOrder) {
  UplinkBook book(5);
  book.Add(3, {{10, 8}, {11, 8}});
  book.Add(1, {{11, 8}});
  book.Add(4, {{12, 8}});
  // Every domain changed: every running job, each once, in job order.
  EXPECT_EQ(book.TakeAffected(), (std::vector<int>{1, 3, 4}));
  EXPECT_TRUE(book.TakeAffected().empty());  // nothing changed since
  book.Remove(4);                            // domain 12 changed, nobody else uses it
  EXPECT_TRUE(book.TakeAffected().empty());
  book.Add(0, {{10, 2}});  // domain 10: job 3 shares it, and 0 itself was just placed
  EXPECT_EQ(book.TakeAffected(), (std::vector<int>{0, 3}));
  book.Remove(3);  // domains 10 and 11: 0 and 1 remain on them
  EXPECT_EQ(book.TakeAffected(), (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace topogang::sim
