// Test cases cut short on one rank while the others go on into a collective, for the failure
// tests of the test main (tests/CMakeLists.txt). Run on several ranks with one tag:
//   [throws]   rank 1 throws out of the test case
//   [require]  rank 1 fails a REQUIRE
// Either way the job must end at once with rank 1's message, not wait for the others' watchdog
// (or, worse, let rank 1's next collective match theirs).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "tests/support/test_world.hpp"

using namespace usp;

TEST_CASE("rank 1 throws while the others all-reduce", "[throws]") {
  Tensor t = Tensor::from_floats({1.0f}, {1});
  if (testing::world().rank() == 1) throw std::runtime_error("deliberate exception on rank 1");
  testing::world().all_reduce(t);
}

TEST_CASE("rank 1 fails a REQUIRE while the others all-reduce", "[require]") {
  Tensor t = Tensor::from_floats({1.0f}, {1});
  const int rank = testing::world().rank();
  REQUIRE(rank != 1);
  testing::world().all_reduce(t);
}

// Reached only if the failure above did not end the job: its all_reduce would be the one the
// other ranks' test case is waiting in.
TEST_CASE("the next test case", "[throws][require]") {
  Tensor t = Tensor::from_floats({1.0f}, {1});
  testing::world().all_reduce(t);
}
