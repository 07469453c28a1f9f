// The per-step progress line (common/train/step_progress.hpp): its numbers worked by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/train/step_progress.hpp"

using namespace usp;

TEST_CASE("progress line: tokens/s total and per rank, MFU over the ranks' peak, the held-out loss", "[train]") {
  // 4 ranks, 1,843,250 tokens in 2 s: 921,625 tok/s, 230,406 per rank (rounded);
  // 4e15 FLOPs in 2 s over 4 ranks of 1e15: 50.0 %.
  StepProgress p{340, 1.351234, 2.0, 1843250, 4, 4e15, 1e15, 1.71044};
  CHECK(progress_line(p) ==
        "step  340  loss 1.3512  dt 2000.0 ms  tok/s 921,625 (230,406 per rank)  mfu 50.0%  val_loss 1.7104");
  // One rank, no peak (no MFU), not evaluated this step, fewer than 1000 tokens/s.
  StepProgress q{7, 5.5, 0.5, 300, 1, 1e9, 0, NAN};
  CHECK(progress_line(q) == "step    7  loss 5.5000  dt 500.0 ms  tok/s 600");
  // Millions group in threes.
  q.tokens = 2'000'000'000;
  CHECK(progress_line(q) == "step    7  loss 5.5000  dt 500.0 ms  tok/s 4,000,000,000");
}

TEST_CASE("progress flags: evaluation every N steps and after the last", "[train]") {
  const ProgressFlags f{3, 4, false};
  std::vector<std::int64_t> at;
  for (std::int64_t s = 0; s < 10; ++s)
    if (f.evaluates(s, 10)) at.push_back(s);
  CHECK(at == std::vector<std::int64_t>{2, 5, 8, 9});
  CHECK_FALSE(ProgressFlags{0, 4, false}.evaluates(9, 10));
}
