// DualPipeV (see schedule_orders.hpp for its rule; ZB-H1 and ZB-H2 are exercise 08.2,
// solutions/08_pipeline_parallel/zero_bubble.cpp).
#include <algorithm>
#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

namespace usp::ch08 {

RankOps dualpipev(int p, int m) {
  RankOps ops(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& list = ops[static_cast<std::size_t>(r)];
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    std::deque<std::pair<int, int>> queued;  // (micro-batch, chunk) whose W waits, oldest first
    auto F = [&](int c) { list.push_back({OpKind::F, next_f[c]++, c}); };
    // A backward of chunk c: split (B now, its W queued) or whole (BW).
    auto backward = [&](int c, bool split) {
      const int j = next_b[c]++;
      list.push_back({split ? OpKind::B : OpKind::BW, j, c});
      if (split) queued.emplace_back(j, c);
    };
    auto W = [&] {
      list.push_back({OpKind::W, queued.front().first, queued.front().second});
      queued.pop_front();
    };
    const int down = p - 1 - r, up = r + 1;  // the ranks below and (with itself) above it
    for (int i = 0; i < 2 * down; ++i) F(0);                          // 1. nF0
    for (int i = 0; i < up; ++i) F(0), F(1);                           // 2. nF0F1
    for (int i = 0; i < down; ++i) backward(1, true), W(), F(1);       // 3. nB1W1F1
    for (int i = 0; i < m - 2 * p + up; ++i)                           // 4. nF0B1F1B0
      F(0), backward(1, false), F(1), backward(0, false);
    for (int i = 0; i < down; ++i) backward(1, false), F(1), backward(0, false);  // 5. nB1F1B0
    for (int i = 0; i < up; ++i) {                                     // 6. nB1B0
      // The first half of these backwards whole, the second half split (their W's fill the
      // tail); odd ranks switch one backward earlier than even ones.
      const bool half = i >= up / 2;
      backward(1, half && (r % 2 == 1 || i > up / 2));
      backward(0, half);
    }
    for (int i = 0; i < down; ++i) W(), backward(0, true);             // 7. nWB0
    while (!queued.empty()) W();                                       // 8. nW
  }
  return ops;
}

}  // namespace usp::ch08
