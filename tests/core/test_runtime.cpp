// Agreement points: a configuration error found on any rank stops every rank, together.
#include <catch2/catch.hpp>

#include "tests/support/test_world.hpp"

using namespace usp;

TEST_CASE("require passes when every rank agrees", "[core][runtime][mpi]") {
  CHECK_NOTHROW(testing::runtime().require(true, "never printed"));
}

TEST_CASE("require fails on every rank when one rank's condition is false", "[core][runtime][mpi]") {
  auto& rt = testing::runtime();
  const bool ok = rt.rank() != rt.size() - 1;  // only the last rank objects
  try {
    rt.require(ok, "expected test message: the last rank objects");
    FAIL("require returned although a rank failed");
  } catch (const CollectiveExit& e) {
    CHECK(e.code == 2);
  }
}

TEST_CASE("agree turns a UsageError on one rank into a collective stop", "[core][runtime][mpi]") {
  auto& rt = testing::runtime();
  bool stopped = false;
  try {
    rt.agree([&] {
      if (rt.rank() == 0) throw UsageError("expected test message: rank 0 rejects the input");
    });
  } catch (const CollectiveExit&) {
    stopped = true;
  }
  CHECK(stopped);
  // Other exceptions are not configuration errors: they propagate on the rank that threw.
  CHECK_THROWS_AS(rt.agree([] { throw Error("not a usage error"); }), Error);
}

TEST_CASE("parse agrees on the command line", "[core][runtime][mpi]") {
  auto& rt = testing::runtime();
  Cli good("t", "t");
  good.add_int("n", 1, "n", 1);
  const char* ok_args[] = {"t", "--n", "4"};
  CHECK(rt.parse(good, 3, ok_args));
  CHECK(good.get_int("n") == 4);
  Cli bad("t", "t");
  bad.add_int("n", 1, "n", 1);
  const char* bad_args[] = {"t", "--n", "0"};
  CHECK_THROWS_AS(rt.parse(bad, 3, bad_args), CollectiveExit);
}

TEST_CASE("skip_if_not_implemented: a part that completes, and one not implemented on any rank", "[core][runtime][mpi]") {
  auto& rt = testing::runtime();
  const CommStats before = rt.world().stats();
  int ran = 0;
  CHECK(rt.skip_if_not_implemented([&] { ++ran; }).empty());
  CHECK(ran == 1);
  // NotImplemented on every rank: every rank gets its message, and the job goes on together.
  const std::string message =
      rt.skip_if_not_implemented([] { throw NotImplemented("exercise 99.1: expected test message"); });
  CHECK(message == "exercise 99.1: expected test message");
  // The agreements travel on the runtime's own control communicator: the world's traffic (which
  // chapters report) is the chapter's alone.
  const CommStats after = rt.world().stats();
  CHECK(after.calls == before.calls);
  CHECK(after.bytes_sent == before.bytes_sent);
  // Other exceptions are bugs, not skips: they propagate on the rank that threw.
  CHECK_THROWS_AS(rt.skip_if_not_implemented([] { throw Error("not a skip"); }), Error);
}
