// The chapter's own schedules: AFAB and interleaved 1F1B (1F1B, ZB-H1 and ZB-H2 are the
// exercises, solutions/08_pipeline_parallel/). See schedule_orders.hpp for each order's rule.
#include "chapters/08_pipeline_parallel/schedule_orders.hpp"

#include <algorithm>
#include <cstddef>

namespace usp::ch08 {

RankOps afab(int p, int m) {
  RankOps ops(static_cast<std::size_t>(p));
  for (auto& list : ops) {
    for (int j = 0; j < m; ++j) list.push_back({OpKind::F, j, 0});
    for (int j = 0; j < m; ++j) list.push_back({OpKind::BW, j, 0});
  }
  return ops;
}

RankOps interleaved_1f1b(int p, int m, int v) {
  const int total = m * v;  // (micro-batch, chunk) pairs per rank
  // The k-th forward / backward of a rank: groups of p micro-batches sweep the chunks upwards
  // in forward, downwards in backward.
  auto forward = [&](int k) {
    const int in_group = k % (p * v);
    return Op{OpKind::F, (k / (p * v)) * p + k % p, in_group / p};
  };
  auto backward = [&](int k) {
    const int in_group = k % (p * v);
    return Op{OpKind::BW, (k / (p * v)) * p + k % p, v - 1 - in_group / p};
  };

  RankOps ops(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    // Rank r's first backward is micro-batch 0 of its last chunk, so it first runs the first
    // group's forwards through its v-1 other chunks ((v-1)·p of them); then, while micro-batch 0
    // finishes the p-1-r stages after it and its gradient comes back, two more per stage.
    // (Megatron-LM's count; with m = p it runs every forward first, as Megatron does.)
    const int warmup = m == p ? total : std::min(total, 2 * (p - 1 - r) + (v - 1) * p);
    auto& list = ops[static_cast<std::size_t>(r)];
    for (int k = 0; k < warmup; ++k) list.push_back(forward(k));
    for (int k = 0; k < total - warmup; ++k) {
      list.push_back(forward(warmup + k));
      list.push_back(backward(k));
    }
    for (int k = total - warmup; k < total; ++k) list.push_back(backward(k));
  }
  return ops;
}

}  // namespace usp::ch08
