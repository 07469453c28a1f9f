// ZB-H2 and DualPipeV (see schedule_orders.hpp for each order's rule).
#include <algorithm>
#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

namespace usp::ch08 {

RankOps zb_h2(int p, int m) {
  // Every rank run one time unit at a time, all ops lasting one unit and messages arriving at
  // once; a free rank picks by the priorities of schedule_orders.hpp. Its picks are its list.
  const auto P = static_cast<std::size_t>(p), M = static_cast<std::size_t>(m);
  constexpr int kNever = -1;
  std::vector<std::vector<int>> f_done(P, std::vector<int>(M, kNever)), b_done(P, std::vector<int>(M, kNever));
  std::vector<int> next_f(P, 0), next_b(P, 0), in_flight(P, 0), free_at(P, 0), w_done(P, 0);
  std::vector<std::deque<int>> pending_w(P);  // B done, W not yet: oldest first
  RankOps ops(P);
  const int limit = 2 * p - 1;
  auto ready = [](int done_at, int t) { return done_at != kNever && done_at <= t; };
  for (int t = 0;; ++t) {
    bool all_done = true;
    for (std::size_t r = 0; r < P; ++r) {
      if (w_done[r] < m) all_done = false;
      if (free_at[r] > t || w_done[r] == m) continue;
      auto& list = ops[r];
      const int jb = next_b[r], jf = next_f[r];
      const auto jbs = static_cast<std::size_t>(jb), jfs = static_cast<std::size_t>(jf);
      if (jb < m && ready(f_done[r][jbs], t) && (r + 1 == P || ready(b_done[r + 1][jbs], t))) {
        list.push_back({OpKind::B, jb, 0});  // the oldest micro-batch's gradient is here: B first
        b_done[r][jbs] = t + 1;
        pending_w[r].push_back(jb);
        ++next_b[r];
      } else if (jf < m && in_flight[r] < limit && (r == 0 || ready(f_done[r - 1][jfs], t))) {
        list.push_back({OpKind::F, jf, 0});  // else the next forward, within the memory limit
        f_done[r][jfs] = t + 1;
        ++in_flight[r];
        ++next_f[r];
      } else if (!pending_w[r].empty()) {
        list.push_back({OpKind::W, pending_w[r].front(), 0});  // else a postponed weight gradient
        pending_w[r].pop_front();
        --in_flight[r];
        ++w_done[r];
      } else {
        continue;  // idle: waiting for a message
      }
      free_at[r] = t + 1;
    }
    if (all_done) break;
  }
  return ops;
}

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
