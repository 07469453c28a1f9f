// A job in which one rank fails while all the others wait for it in a collective: rank 1 (rank
// 0 in a one-rank job) throws, the rest sit in a world barrier that can never complete. The
// failure rule of usp::run (runtime.hpp) must turn this into a prompt, non-zero exit of every
// rank with the message printed once; the expect_failure.sh harness checks exactly that. A
// hang here means a dead rank can leave its peers waiting forever.
#include <stdexcept>

#include "common/runtime.hpp"

int main(int argc, char** argv) {
  return usp::run(argc, argv, [](usp::Runtime& rt) {
    const int failing = rt.size() > 1 ? 1 : 0;
    if (rt.rank() == failing) throw std::runtime_error("deliberate failure on one rank");
    rt.world().barrier();  // never completes: the failing rank does not come
    return 0;
  });
}
