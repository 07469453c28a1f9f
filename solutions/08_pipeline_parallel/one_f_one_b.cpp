// Exercise 08.1, the reference solution (part 1 of 2): the 1F1B order (contract in
// chapters/08_pipeline_parallel/schedule_orders.hpp, one_f_one_b).
#include <cstddef>

#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

namespace usp::ch08 {

RankOps one_f_one_b(int p, int m) {
  RankOps ops(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& list = ops[static_cast<std::size_t>(r)];
    // Micro-batch 0's gradient comes back to rank r only after going through the p-1-r stages
    // after it and back; every forward rank r runs meanwhile keeps its activations. Holding p - r
    // is what it takes for rank r never to wait on a gradient in the steady phase (the stage after
    // it holds one fewer), and what bounds its memory.
    const int limit = p - r;
    int next_f = 0, next_b = 0;  // the next micro-batch to go forward, and backward
    while (next_b < m) {
      // A forward whenever the bound lets one in; otherwise the oldest micro-batch goes out.
      if (next_f < m && next_f - next_b < limit)
        list.push_back({OpKind::F, next_f++, 0});
      else
        list.push_back({OpKind::BW, next_b++, 0});
    }
  }
  return ops;
}

}  // namespace usp::ch08
