// Exercise 08.1: the 1F1B order (contract in chapters/08_pipeline_parallel/schedule_orders.hpp).
#include <algorithm>
#include <cstddef>

#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

namespace usp::ch08 {

RankOps one_f_one_b(int p, int m) {
  RankOps ops(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& list = ops[static_cast<std::size_t>(r)];
    // Rank r's first backward needs micro-batch 0 to have gone through the p-1-r stages after
    // it and back: until then it can only run forwards.
    const int warmup = std::min(p - 1 - r, m);
    int next_f = 0, next_b = 0;
    for (; next_f < warmup; ++next_f) list.push_back({OpKind::F, next_f, 0});
    // Steady state: one in (a forward), one out (the oldest backward).
    for (; next_f < m; ++next_f, ++next_b) {
      list.push_back({OpKind::F, next_f, 0});
      list.push_back({OpKind::BW, next_b, 0});
    }
    // Cool-down: drain the micro-batches still in flight.
    for (; next_b < m; ++next_b) list.push_back({OpKind::BW, next_b, 0});
  }
  return ops;
}

}  // namespace usp::ch08
