// Exercise 08.2: the zero-bubble schedules ZB-H1 and ZB-H2, each backward split into B (input
// gradient) and W (weight gradient).
//
// The contracts are in chapters/08_pipeline_parallel/schedule_orders.hpp (zb_h1, zb_h2), the
// semantics a list runs under in schedule.hpp; the lesson (chapters/08_pipeline_parallel/
// README.md, "Exercise 08.2") gives the idea and the questions. Replace the throws with your code.
// Check it with: ./usp test 08.2 --exercises, then run it with ./usp run 08 --exercises
#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

#include "common/error.hpp"

namespace usp::ch08 {

RankOps zb_h1(int /*p*/, int /*m*/) { throw NotImplemented("exercise 08.2: zb_h1 (ZB-H1)"); }

RankOps zb_h2(int /*p*/, int /*m*/) { throw NotImplemented("exercise 08.2: zb_h2 (ZB-H2)"); }

}  // namespace usp::ch08
