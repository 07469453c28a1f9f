// Jobs that deadlock because of one rank, for the watchdog's failure tests (tests/CMakeLists.txt):
// each must end, non-zero, with the watchdog's message soon after USP_COMM_TIMEOUT, instead of
// sitting in ctest's timeout. The scenario is the first argument:
//   collective  the last rank never joins a world all_reduce (it computes forever instead);
//               the others wait in it
//   recv        rank 0 receives from rank 1 (tag 7), which never sends; the others compute
//   stopped     the last rank is stopped (SIGSTOP) before a world all_reduce; the others wait
//               in it, and the job must end with the stopped rank too
//   stopped_waiting  the last rank waits to receive from rank 0 (tag 9) and is stopped there, one
//               second in; rank 0 waits in a world all_reduce. When the job ends, the stopped rank
//               may be woken before it is killed: the time it spent stopped was not spent waiting,
//               so it must not blame rank 0 (only the healthy ranks' watchdogs speak)
// Needs at least 2 ranks.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "common/runtime.hpp"

namespace {

// A rank busy elsewhere (a long computation, an endless loop): not waiting on anyone, so its
// own watchdog has nothing to say.
[[noreturn]] void compute_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  return usp::run(argc, argv, [&](usp::Runtime& rt) {
    rt.require(rt.size() >= 2, "hang_on_one_rank needs at least 2 ranks");
    rt.require(scenario == "collective" || scenario == "recv" || scenario == "stopped" || scenario == "stopped_waiting",
               "usage: hang_on_one_rank collective|recv|stopped|stopped_waiting");
    const int last = rt.size() - 1;
    usp::Tensor t = usp::Tensor::from_floats({1.0f, 2.0f}, {2});
    if (scenario == "recv") {
      if (rt.rank() == 0) rt.world().recv(t, 1, 7);
      compute_forever();
    }
    if (scenario == "stopped_waiting" && rt.rank() == last) {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        raise(SIGSTOP);  // the whole process, in the middle of its recv
      }).detach();
      rt.world().recv(t, 0, 9);
      compute_forever();
    }
    if (rt.rank() == last) {
      if (scenario == "stopped") raise(SIGSTOP);
      compute_forever();
    }
    rt.world().all_reduce(t);
    return 0;
  });
}
