// Exercise 08.1 (part 1 of 2): the 1F1B order of forwards and backwards, rank by rank.
//
// The contract is in chapters/08_pipeline_parallel/schedule_orders.hpp (one_f_one_b), the
// semantics a list runs under in schedule.hpp; the lesson (chapters/08_pipeline_parallel/
// README.md, "Exercise 08.1") gives the idea and the questions. Replace the throw with your code.
// Check it with: ./usp test 08.1 --exercises, then run it with ./usp run 08 --exercises
#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

#include "common/error.hpp"

namespace usp::ch08 {

RankOps one_f_one_b(int /*p*/, int /*m*/) {
  throw NotImplemented("exercise 08.1: one_f_one_b (the 1F1B order)");
}

}  // namespace usp::ch08
