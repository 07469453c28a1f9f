// Exercise 08.2: ZB-H1, splitting each backward into B (input gradient) and W (weight gradient)
// and placing the W's in the bubble.
//
// The contract is in chapters/08_pipeline_parallel/schedule_orders.hpp (zb_h1); the idea is in
// the playbook's "Zero Bubble and DualPipe". Replace the throw with your code.
// Check it with: ./usp test 08 --exercises, then run it with ./usp run 08 --exercises
#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

#include "common/error.hpp"

namespace usp::ch08 {

RankOps zb_h1(int p, int m) {
  (void)p, (void)m;
  throw NotImplemented(
      "exercise 08.2: zb_h1 (hint: the stage before waits for B, nobody waits for W: while the "
      "gradient travels down to rank 0, what could rank r be doing?)");
}

}  // namespace usp::ch08
