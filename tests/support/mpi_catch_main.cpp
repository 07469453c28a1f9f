// The main of every test executable: starts the Runtime (MPI when launched by mpirun), runs the
// Catch2 session on every rank, and agrees on the result.
//   * rank 0 reports to the console as usual;
//   * other ranks report into a file, printed with a "[rank r]" banner only if they failed;
//   * the exit code is non-zero on every rank if any rank failed;
//   * a test case cut short on one rank of several ends the job at once (RankFailureListener);
//   * the communication watchdog waits 60 s unless USP_COMM_TIMEOUT says otherwise: no test
//     waits on other ranks for that long, and a deadlocked one ends well before ctest's limit.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "tests/support/test_world.hpp"

namespace usp::testing {
namespace {
Runtime* g_runtime = nullptr;
}
Runtime& runtime() { return *g_runtime; }
}  // namespace usp::testing

namespace {

// A failure that cuts a test case short on this rank: a REQUIRE or FAIL (which throw out of the
// test case), or an exception escaping it. From there on this rank runs other code than
// its peers: they may wait forever in the test case's next collective, or worse, that collective
// may match an unrelated one of this rank's next test case (MPI matches collectives by order
// only) and deliver wrong data. So on a multi-rank run such a failure ends the job at once with
// this rank's message, before this rank communicates again. CHECK failures leave the control
// flow alone (every rank still issues the same collectives) and are reported as usual at the
// end. The one-rank run of the same executable still runs and reports every test case.
// One line for a failed assertion: the test case, where, what, and the INFO/CAPTURE context.
std::string describe_failure(const Catch::AssertionStats& stats, const std::string& test_case,
                             const char* at = "at") {
  const Catch::AssertionResult& r = stats.assertionResult;
  std::ostringstream out;
  out << "test case '" << test_case << "' " << at << " " << r.getSourceInfo().file << ":" << r.getSourceInfo().line << ": ";
  if (r.getResultType() == Catch::ResultWas::ThrewException) {
    out << "unexpected exception: " << r.getMessage();
  } else if (r.hasExpression()) {
    out << r.getExpressionInMacro() << " failed (" << r.getExpandedExpression() << ")";
    if (r.hasMessage()) out << ": " << r.getMessage();
  } else {
    out << r.getMessage();
  }
  for (const auto& info : stats.infoMessages)  // INFO and CAPTURE (an exception's text is already out)
    if (info.message != r.getMessage()) out << " [with " << info.message << "]";
  return out.str();
}

// This rank's first failed assertion, printed once at the end ("usp: first failure ..."), so that
// a grader (./usp test NN --exercises) can say in one line why a test failed.
std::string g_first_failure;

// A failure that cuts a test case short on this rank: a REQUIRE or FAIL (which throw out of the
// test case), or an exception escaping it. From there on this rank runs other code than
// its peers: they may wait forever in the test case's next collective, or worse, that collective
// may match an unrelated one of this rank's next test case (MPI matches collectives by order
// only) and deliver wrong data. So on a multi-rank run such a failure ends the job at once with
// this rank's message, before this rank communicates again. CHECK failures leave the control
// flow alone (every rank still issues the same collectives) and are reported as usual at the
// end. The one-rank run of the same executable still runs and reports every test case.
class RankFailureListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override { test_case_ = info.name; }

  bool assertionEnded(const Catch::AssertionStats& stats) override {
    const Catch::AssertionResult& r = stats.assertionResult;
    if (r.isOk()) return true;
    if (g_first_failure.empty()) g_first_failure = describe_failure(stats, test_case_);
    usp::Runtime& rt = usp::testing::runtime();
    if (rt.size() == 1 || !cuts_test_case_short(r)) return true;
    usp::say_line("[rank " + std::to_string(rt.rank()) + "] fatal: " +
                  describe_failure(stats, test_case_, "stopped on this rank at") +
                  " -- the other ranks cannot go on without it, so the job ends here");
    rt.abort(1);
  }

 private:
  static bool cuts_test_case_short(const Catch::AssertionResult& r) {
    switch (r.getResultType()) {
      // A signal: Catch reports it and re-raises it, so this rank dies and mpirun ends the job
      // anyway. (It is also how a rank sees the SIGTERM of a job another rank aborted.)
      case Catch::ResultWas::FatalErrorCondition: return false;
      // Inside a CHECK_NOTHROW (or CHECK(f()) with f throwing) the test case goes on; one that
      // escaped the test case is reported with no macro name.
      case Catch::ResultWas::ThrewException:
        if (r.getTestMacroName().empty()) return true;
        break;
      default: break;
    }
    // REQUIRE, REQUIRE_THROWS ..., FAIL: Catch throws out of the test case after a failure.
    return (r.m_info.resultDisposition & Catch::ResultDisposition::Normal) != 0;
  }

  std::string test_case_;
};

// USP_TEST_FILTER (a Catch2 test spec, e.g. "[ex08.1]" or "~[ex08.1]~[ex08.2]") narrows whatever
// the command line selects: specs written side by side in one argument must all match, so the
// filter is appended to each command-line spec (ctest's "[mpi]" becomes "[mpi][ex08.1]").
// ./usp test NN.K --exercises sets it to grade one exercise. Specs with commas (OR) are not
// supported here. With no spec on the command line the filter stands alone, and a filter of
// exclusions only ("~*exercise 09.1*") would then match the hidden test cases too (a "[.tag]"
// case is skipped only when no spec is given): "~[.]" keeps them hidden.
void apply_test_filter(Catch::Session& session) {
  const char* filter = std::getenv("USP_TEST_FILTER");
  if (filter == nullptr || *filter == '\0') return;
  auto& specs = session.configData().testsOrTags;
  if (specs.empty()) specs.emplace_back(std::string("~[.]") + filter);
  else
    for (auto& spec : specs) spec += filter;
}

}  // namespace

CATCH_REGISTER_LISTENER(RankFailureListener)

int main(int argc, char** argv) {
  // A user's (or ctest's) setting wins.
  setenv("USP_COMM_TIMEOUT", "60", /*overwrite=*/0);
  std::unique_ptr<usp::Runtime> runtime;
  try {
    runtime = std::make_unique<usp::Runtime>(argc, argv);
  } catch (const usp::CollectiveExit& e) {
    return e.code;  // a bad environment, reported once
  }
  usp::Runtime& rt = *runtime;
  usp::testing::g_runtime = &rt;

  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv)) return rc;
  apply_test_filter(session);
  std::string rank_log;
  if (rt.rank() > 0) {
    rank_log = "usp_test_rank" + std::to_string(rt.rank()) + "_" + std::to_string(::getpid()) + ".log";
    session.configData().outputFilename = rank_log;
  }
  int failed = 0;
  try {
    failed = session.run();
  } catch (const std::exception& e) {
    usp::say_line("[rank " + std::to_string(rt.rank()) + "] test session threw: " + e.what());
    rt.abort(1);
  }

  if (!g_first_failure.empty()) {
    std::cout << std::flush;  // after Catch's report, not inside it
    std::cerr << ("usp: first failure on rank " + std::to_string(rt.rank()) + ": " + g_first_failure + "\n") << std::flush;
  }
  auto flag = usp::Tensor::from_floats({failed > 0 ? 1.0f : 0.0f}, {1});
  rt.world().all_reduce(flag, usp::ReduceOp::sum);
  const int failed_ranks = static_cast<int>(flag.to_floats()[0]);
  if (!rank_log.empty()) {
    if (failed > 0) {
      std::ifstream in(rank_log);
      std::stringstream ss;
      ss << in.rdbuf();
      std::cerr << "==== [rank " << rt.rank() << "] failures ====\n" << ss.str() << std::flush;
    }
    std::remove(rank_log.c_str());
  }
  rt.world().barrier();
  if (rt.is_root() && rt.size() > 1)
    std::cout << "usp: " << failed_ranks << " of " << rt.size() << " ranks had failures\n";
  return failed_ranks > 0 ? 1 : 0;
}
