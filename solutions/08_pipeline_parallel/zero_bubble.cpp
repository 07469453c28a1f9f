// Exercise 08.2, the reference solution: ZB-H1 and ZB-H2, the zero-bubble paper's two handcrafted
// schedules (contracts in chapters/08_pipeline_parallel/schedule_orders.hpp, zb_h1 and zb_h2).
#include <cstddef>
#include <deque>
#include <vector>

#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

namespace usp::ch08 {

RankOps zb_h1(int p, int m) {
  // 1F1B's order of F and B (exercise 08.1), B standing where 1F1B runs the whole backward.
  const RankOps order = one_f_one_b(p, m);
  RankOps ops(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& list = ops[static_cast<std::size_t>(r)];
    // Rank r's B's reach rank 0 only after r more stages' B's: rank r keeps r W's in reserve,
    // the weight gradient W(i - r) following the i-th B, and spends them after its last B, while
    // the gradients travel on down. Fewer, and it idles in the cool-down; more, and a W it could
    // have run earlier keeps its micro-batch's activations (and rank 0 would exceed p in flight).
    int next_w = 0;
    for (const Op& op : order[static_cast<std::size_t>(r)]) {
      if (op.kind == OpKind::F) {
        list.push_back(op);
        continue;
      }
      list.push_back({OpKind::B, op.mb, 0});
      if (op.mb >= r) list.push_back({OpKind::W, next_w++, 0});
    }
    for (; next_w < m; ++next_w) list.push_back({OpKind::W, next_w, 0});
  }
  return ops;
}

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

}  // namespace usp::ch08
