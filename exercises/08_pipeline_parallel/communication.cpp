// Exercise 08.1 (part 2 of 2): the messages a compute order implies.
//
// The contract is in chapters/08_pipeline_parallel/schedule.hpp (with_communication, and the
// execution semantics at the top of that header); the lesson (chapters/08_pipeline_parallel/
// README.md, "Exercise 08.1") gives the idea and the questions. Replace the throw with your code.
// Check it with: ./usp test 08.1 --exercises, then run it with ./usp run 08 --exercises
#include "chapters/08_pipeline_parallel/schedule.hpp"

#include "common/error.hpp"

namespace usp::ch08 {

std::vector<std::vector<Op>> with_communication(const StageLayout& /*layout*/,
                                                const std::vector<std::vector<Op>>& /*compute*/) {
  throw NotImplemented("exercise 08.1: with_communication (the messages of a schedule)");
}

}  // namespace usp::ch08
