// The no-block scope (common/no_block.h): outside a scope every step may wait; inside, the first
// step that asks is refused and the scope remembers it.
#include "common/no_block.h"

#include <gtest/gtest.h>

#include <thread>

namespace rdmastor::noblock {
namespace {

TEST(NoBlockTest, RefusesAndTripsOnlyInsideAScope) {
  EXPECT_TRUE(MayWait());
  {
    Scope scope;
    EXPECT_FALSE(scope.tripped());
    EXPECT_FALSE(MayWait());
    EXPECT_TRUE(scope.tripped());
  }
  EXPECT_TRUE(MayWait());
  EXPECT_EQ(WouldBlock("read x").code, ErrorCode::kWouldBlock);
}

TEST(NoBlockTest, ScopesNestAndStayOnTheirThread) {
  Scope outer;
  {
    Scope inner;
    EXPECT_FALSE(MayWait());
    EXPECT_TRUE(inner.tripped());
  }
  EXPECT_FALSE(outer.tripped());  // the inner attempt was the one dropped
  bool other_thread_may_wait = false;
  std::thread([&] { other_thread_may_wait = MayWait(); }).join();
  EXPECT_TRUE(other_thread_may_wait);
  EXPECT_FALSE(outer.tripped());
}

}  // namespace
}  // namespace rdmastor::noblock
