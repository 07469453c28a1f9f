// A job in which one rank fails while all the others wait for it in a collective: rank 1 (rank
// 0 in a one-rank job) throws, the rest sit in a world barrier that can never complete. The
// failure rule of usp::run (runtime.hpp) must turn this into a prompt, non-zero exit of every
// rank with the message printed once; the expect_failure.sh harness checks exactly that. A
// hang here means a dead rank can leave its peers waiting forever.
// With the argument "every", every rank throws the same error (a value all ranks read, a loss
// all ranks saw diverge): the message must appear once, not once per rank.
#include <stdexcept>

#include "common/runtime.hpp"

#include <string>

int main(int argc, char** argv) {
  const bool every = argc > 1 && std::string(argv[argc - 1]) == "every";
  return usp::run(argc, argv, [every](usp::Runtime& rt) {
    if (every) throw std::runtime_error("deliberate failure on every rank");
    const int failing = rt.size() > 1 ? 1 : 0;
    if (rt.rank() == failing) throw std::runtime_error("deliberate failure on one rank");
    rt.world().barrier();  // never completes: the failing rank does not come
    return 0;
  });
}
