// Exercise 08.2: the ZB-H1 order (contract in chapters/08_pipeline_parallel/schedule_orders.hpp).
#include <algorithm>
#include <cstddef>

#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

namespace usp::ch08 {

RankOps zb_h1(int p, int m) {
  RankOps ops(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& list = ops[static_cast<std::size_t>(r)];
    const int warmup = std::min(p - 1 - r, m);
    int next_f = 0, next_w = 0;
    // 1F1B's order of F and B, with B (the input gradient) where 1F1B runs the whole backward.
    // The weight gradient W(i - r) follows the i-th B: rank r keeps r W's in reserve ...
    auto backward = [&](int i) {
      list.push_back({OpKind::B, i, 0});
      if (i >= r) list.push_back({OpKind::W, next_w++, 0});
    };
    for (; next_f < warmup; ++next_f) list.push_back({OpKind::F, next_f, 0});
    int next_b = 0;
    for (; next_f < m; ++next_f, ++next_b) {
      list.push_back({OpKind::F, next_f, 0});
      backward(next_b);
    }
    for (; next_b < m; ++next_b) backward(next_b);
    // ... and spends them after its last B, while the gradients travel on down to rank 0.
    for (; next_w < m; ++next_w) list.push_back({OpKind::W, next_w, 0});
  }
  return ops;
}

}  // namespace usp::ch08
