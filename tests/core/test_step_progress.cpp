// The per-step progress line (common/train/step_progress.hpp): its numbers worked by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

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

TEST_CASE("progress line: an MFU above 100 % is marked, never printed as if it were real", "[train]") {
  // 3e12 FLOPs in 1 s on one rank of a 2e12 FLOP/s peak (measured low): 150.0 %, with the '*'.
  StepProgress p{2, 4.0, 1.0, 1000, 1, 3e12, 2e12, NAN};
  CHECK(mfu_percent(p) == 150.0);
  CHECK(progress_line(p) == "step    2  loss 4.0000  dt 1000.0 ms  tok/s 1,000  mfu 150.0%*");
  // Exactly the peak is no marker; 2 ranks halve it.
  p.flops = 2e12;
  CHECK(progress_line(p) == "step    2  loss 4.0000  dt 1000.0 ms  tok/s 1,000  mfu 100.0%");
  p.flops = 3e12;
  p.ranks = 2;
  CHECK(progress_line(p) == "step    2  loss 4.0000  dt 1000.0 ms  tok/s 1,000 (500 per rank)  mfu 75.0%");
  // No peak, no FLOPs or no time: no MFU at all.
  const StepProgress no_peak{0, 1.0, 1.0, 10, 1, 1e9, 0, NAN}, no_flops{0, 1.0, 1.0, 10, 1, 0, 1e9, NAN},
      no_time{0, 1.0, 0.0, 10, 1, 1e9, 1e9, NAN};
  CHECK(std::isnan(mfu_percent(no_peak)));
  CHECK(std::isnan(mfu_percent(no_flops)));
  CHECK(std::isnan(mfu_percent(no_time)));
  CHECK(progress_line(no_peak) == "step    0  loss 1.0000  dt 1000.0 ms  tok/s 10");
  CHECK(std::string(kMfuAbovePeakNote).rfind("  * mfu above 100 %", 0) == 0);
}

TEST_CASE("progress flags: evaluation every N steps and after the last", "[train]") {
  const ProgressFlags f{3, 4, false};
  std::vector<std::int64_t> at;
  for (std::int64_t s = 0; s < 10; ++s)
    if (f.evaluates(s, 10)) at.push_back(s);
  CHECK(at == std::vector<std::int64_t>{2, 5, 8, 9});
  CHECK_FALSE(ProgressFlags{0, 4, false}.evaluates(9, 10));
}
