// Exercise 08.1: the 1F1B schedule's order of forwards and backwards, rank by rank.
//
// The contract is in chapters/08_pipeline_parallel/schedule_orders.hpp (one_f_one_b); the idea
// is in the playbook's "One-forward-one-backward and Llama 3.1 schemes". Replace the throw with
// your code.
// Check it with: ./usp test 08 --exercises, then run it with ./usp run 08 --exercises
#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

#include "common/error.hpp"

namespace usp::ch08 {

RankOps one_f_one_b(int p, int m) {
  (void)p, (void)m;
  throw NotImplemented(
      "exercise 08.1: one_f_one_b (hint: how long does micro-batch 0's gradient take to come back "
      "to rank r, and how many forwards fit in that time?)");
}

}  // namespace usp::ch08
