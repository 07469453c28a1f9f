// The main of every test executable: starts the Runtime (MPI when launched by mpirun), runs the
// Catch2 session on every rank, and agrees on the result.
//   * rank 0 reports to the console as usual;
//   * other ranks report into a file, printed with a "[rank r]" banner only if they failed;
//   * the exit code is non-zero on every rank if any rank failed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/support/test_world.hpp"

namespace usp::testing {
namespace {
Runtime* g_runtime = nullptr;
}
Runtime& runtime() { return *g_runtime; }
}  // namespace usp::testing

int main(int argc, char** argv) {
  usp::Runtime rt(argc, argv);
  usp::testing::g_runtime = &rt;

  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv)) return rc;
  std::string rank_log;
  if (rt.rank() > 0) {
    rank_log = "usp_test_rank" + std::to_string(rt.rank()) + "_" + std::to_string(::getpid()) + ".log";
    session.configData().outputFilename = rank_log;
  }
  int failed = 0;
  try {
    failed = session.run();
  } catch (const std::exception& e) {
    std::cerr << "[rank " << rt.rank() << "] test session threw: " << e.what() << "\n";
    rt.abort(1);
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
