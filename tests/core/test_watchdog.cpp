// The communication watchdog's pieces that one rank can check: reading USP_COMM_TIMEOUT, the
// fatal message, and the monitor reporting a wait that outlives the timeout (with a test handler
// in place of ending the job). The job-ending behaviour itself is checked by the failure tests
// at the end of tests/CMakeLists.txt.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "common/comm/watchdog.hpp"
#include "common/error.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using Catch::Matchers::Contains;

TEST_CASE("USP_COMM_TIMEOUT: seconds, 0 for off, anything else a clear error", "[core][watchdog]") {
  CHECK(watchdog::parse_timeout("5") == 5.0);
  CHECK(watchdog::parse_timeout("0.25") == 0.25);
  CHECK(watchdog::parse_timeout("300") == 300.0);
  CHECK(watchdog::parse_timeout("0") == 0.0);
  CHECK(watchdog::parse_timeout("1e6") == 1e6);
  for (const char* bad : {"", "abc", "5s", " 5", "5 ", "-1", "inf", "nan", "+5", "0x10"}) {
    INFO("USP_COMM_TIMEOUT='" << bad << "'");
    CHECK_THROWS_AS(watchdog::parse_timeout(bad), UsageError);
    CHECK_THROWS_WITH(watchdog::parse_timeout(bad),
                      "USP_COMM_TIMEOUT='" + std::string(bad) +
                          "' is not a number of seconds (e.g. 60; 0 turns the communication watchdog off)");
  }
  CHECK_THROWS_WITH(watchdog::parse_timeout("2e6"),
                    "USP_COMM_TIMEOUT=2e6 is more than 1e+06 seconds (0 turns the communication watchdog off)");
}

TEST_CASE("rank lists shorten runs of three or more", "[core][watchdog]") {
  CHECK(watchdog::rank_list({}).empty());
  CHECK(watchdog::rank_list({3}) == "3");
  CHECK(watchdog::rank_list({0, 1}) == "0,1");
  CHECK(watchdog::rank_list({0, 1, 2}) == "0-2");
  CHECK(watchdog::rank_list({0, 1, 2, 3, 6, 7}) == "0-3,6,7");
  CHECK(watchdog::rank_list({0, 2, 4}) == "0,2,4");
  CHECK(watchdog::rank_list({1, 2, 3, 5, 6, 7, 8}) == "1-3,5-8");
}

TEST_CASE("the watchdog's message names the op, the communicator, the wait and the peers", "[core][watchdog]") {
  const watchdog::Subject all_reduce{"all_reduce", "mpi[0-3]", 2, {0, 1, 3}, true};
  CHECK(watchdog::fatal_message(all_reduce, 60.04, 60) ==
        "[rank 2] fatal: all_reduce on communicator mpi[0-3] waited 60.0 s for one of ranks [0,1,3] "
        "(watchdog, USP_COMM_TIMEOUT=60)");
  const watchdog::Subject recv{"recv (tag 7)", "mpi[0-2]", 0, {1}, false};
  CHECK(watchdog::fatal_message(recv, 5.26, 5) ==
        "[rank 0] fatal: recv (tag 7) on communicator mpi[0-2] waited 5.3 s for rank 1 (watchdog, USP_COMM_TIMEOUT=5)");
  const watchdog::Subject finalize{"MPI_Finalize", "", 1, {0, 2, 3, 4}, true};
  CHECK(watchdog::fatal_message(finalize, 0.5, 0.5) ==
        "[rank 1] fatal: MPI_Finalize waited 0.5 s for one of ranks [0,2-4] (watchdog, USP_COMM_TIMEOUT=0.5)");
}

TEST_CASE("a communicator's label: backend and world ranks", "[core][watchdog][mpi]") {
  Communicator& w = testing::world();
  std::vector<int> all;
  for (int r = 0; r < w.size(); ++r) all.push_back(r);
  CHECK(w.label() == w.backend() + "[" + watchdog::rank_list(all) + "]");
}

namespace {

// Collects the watchdog's reports while alive, with a short timeout; restores both after.
class ExpiryRecorder {
 public:
  explicit ExpiryRecorder(double timeout_s) : saved_timeout_(watchdog::timeout()) {
    watchdog::set_expiry_handler_for_testing([this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back(m);
      cv_.notify_all();
    });
    watchdog::set_timeout(timeout_s);
  }
  ~ExpiryRecorder() {
    watchdog::set_timeout(saved_timeout_);
    watchdog::set_expiry_handler_for_testing(nullptr);
  }
  // The reports so far, after waiting up to `limit` for at least n.
  std::vector<std::string> wait_for(std::size_t n, std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, limit, [&] { return messages_.size() >= n; });
    return messages_;
  }

 private:
  double saved_timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> messages_;
};

}  // namespace

TEST_CASE("the monitor reports a wait once it outlives the timeout, and only then", "[core][watchdog]") {
  using Clock = watchdog::Watch::Clock;
  ExpiryRecorder recorder(0.3);
  {
    // A wait that ends in time is never reported.
    const watchdog::Watch quick({"barrier", "test[0-2]", 0, {1, 2}, true});
  }
  const auto start = Clock::now();
  const watchdog::Watch stuck({"recv (tag 3)", "test[0-2]", 0, {2}, false});
  const auto reports = recorder.wait_for(1, std::chrono::seconds(10));
  const double after = std::chrono::duration<double>(Clock::now() - start).count();
  REQUIRE(reports.size() == 1);
  CHECK(after >= 0.3);
  CHECK(after < 5.0);  // the deadline is 0.3 s; the rest is scheduling slack on a loaded machine
  CHECK_THAT(reports[0], Contains("[rank 0] fatal: recv (tag 3) on communicator test[0-2] waited 0."));
  CHECK_THAT(reports[0], Contains("s for rank 2 (watchdog, USP_COMM_TIMEOUT=0.3)"));

  // A wait that began before it was registered (an NCCL op waited on late) is overdue at once.
  const watchdog::Watch old({"all_gather", "test[0-2]", 0, {1, 2}, true}, Clock::now() - std::chrono::seconds(1));
  const auto more = recorder.wait_for(2, std::chrono::seconds(10));
  REQUIRE(more.size() == 2);
  CHECK_THAT(more[1], Contains("all_gather on communicator test[0-2] waited 1."));
  CHECK_THAT(more[1], Contains("for one of ranks [1,2]"));
}
