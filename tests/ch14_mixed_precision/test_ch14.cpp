// Chapter 14: mixed precision. Exercise 14.1 (one step of dynamic loss scaling) by hand: exact
// unscaling, a skip on inf and on NaN, the scale backing off and growing by its factors within
// [min_scale, max_scale], an overflow at min_scale an error, every bad configuration refused with
// its text, any gradient dtype. The
// formats from the core's codecs: their constants and an enumeration of every narrow bit pattern.
// Training: bf16 and fp16 track fp32; fp16 without scaling loses gradients to underflow (zeros
// and subnormals) where the scaled run loses none; a scale too large skips steps and halves
// until the gradients fit.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "chapters/14_mixed_precision/format_tables.hpp"
#include "chapters/14_mixed_precision/fp8_gemm_run.hpp"
#include "chapters/14_mixed_precision/fp8_linears.hpp"
#include "chapters/14_mixed_precision/fp8_tiles.hpp"
#include "chapters/14_mixed_precision/loss_scaling.hpp"
#include "chapters/14_mixed_precision/precision_report.hpp"
#include "chapters/14_mixed_precision/precision_training.hpp"
#include "common/data/dataset.hpp"
#include "common/dtype.hpp"
#include "common/float_formats.hpp"
#include "common/rng.hpp"
#include "kernels/fp8/fp8_gemm.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"

using namespace usp;
using namespace usp::ch14;

namespace {

// f16 gradients holding S·g for the given g (each S·g exactly representable in f16 below).
// v as a 1-D tensor of dtype dt (rounded to it).
Tensor tensor_of(const std::vector<float>& v, DType dt) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(v.size())}, dt);
  convert_from_float(v.data(), dt, t.raw(), v.size());
  return t;
}
Tensor f16_of(const std::vector<float>& v) { return tensor_of(v, DType::f16); }

// Every field of two scaler states equal (bit for bit for the floats: NaN is no value they hold).
bool same_state(const LossScaleState& a, const LossScaleState& b) {
  return a.scale == b.scale && a.growth == b.growth && a.backoff == b.backoff &&
         a.growth_interval == b.growth_interval && a.min_scale == b.min_scale && a.max_scale == b.max_scale &&
         a.good_steps == b.good_steps && a.skipped_steps == b.skipped_steps;
}

// Exercise 14.1 on 1-D gradients that must make a good step (REQUIREd): the unscaled fp32 values.
Tensor good_step(const Tensor& grads, LossScaleState& s) {
  Tensor out = Tensor::empty({grads.numel()});
  REQUIRE(unscale_and_update(grads, out, s));
  return out;
}

}  // namespace

TEST_CASE("exercise 14.1: a good step divides by the scale in fp32 and counts toward growth", "[ch14]") {
  LossScaleState s;
  s.scale = 1024.0f;
  s.growth_interval = 3;
  // g = {2^-20, -3·2^-16, 0, 1.5}: below f16's smallest subnormal 2^-24 only once scaled... they
  // are representable as S·g = {2^-10, -3·2^-6, 0, 1536}; unscaled in fp32 they come back exactly.
  const std::vector<float> g = {0x1p-20f, -3 * 0x1p-16f, 0.0f, 1.5f};
  std::vector<float> sg;
  for (float x : g) sg.push_back(x * 1024.0f);
  const Tensor scaled = f16_of(sg);
  Tensor out = Tensor::empty({4});
  REQUIRE(unscale_and_update(scaled, out, s));
  for (int i = 0; i < 4; ++i) {
    INFO("element " << i);
    CHECK(out.data<float>()[i] == g[static_cast<std::size_t>(i)]);
  }
  CHECK(s.scale == 1024.0f);
  CHECK(s.good_steps == 1);
  CHECK(s.skipped_steps == 0);
  REQUIRE(unscale_and_update(scaled, out, s));
  CHECK(s.good_steps == 2);
  CHECK(s.scale == 1024.0f);
  // The third good step in a row: this step's gradients divided by 1024, then the scale doubles.
  REQUIRE(unscale_and_update(scaled, out, s));
  CHECK(out.data<float>()[3] == 1.5f);
  CHECK(s.scale == 2048.0f);
  CHECK(s.good_steps == 0);
}

TEST_CASE("exercise 14.1: an inf or a NaN anywhere skips the step and halves the scale", "[ch14]") {
  for (const float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()}) {
    INFO("bad value " << bad);
    LossScaleState s;
    s.scale = 65536.0f;
    s.growth_interval = 2;
    s.good_steps = 1;  // one good step already: the overflow must reset the count
    std::vector<float> v(37, 0.25f);
    v[29] = bad;  // far from the start: a check of the first elements only fails
    const Tensor scaled = f16_of(v);
    Tensor out = Tensor::empty({37});
    CHECK_FALSE(unscale_and_update(scaled, out, s));
    CHECK(s.scale == 32768.0f);
    CHECK(s.good_steps == 0);
    CHECK(s.skipped_steps == 1);
    // The next good step starts the count again: no growth yet after one.
    const Tensor fine = f16_of(std::vector<float>(37, 0.25f));
    CHECK(unscale_and_update(fine, out, s));
    CHECK(s.scale == 32768.0f);
    CHECK(s.good_steps == 1);
  }
}

TEST_CASE("exercise 14.1: gradients below f16's range come back exactly: the division is in fp32", "[ch14]") {
  // What loss scaling is for: S = 2^16 lifts g = 2^-30 (far below f16's smallest subnormal,
  // 2^-24) to S·g = 2^-14, an f16 normal. Unscaled in fp32 it is 2^-30 again, exactly; divided
  // in f16 (or rounded back to f16 afterwards) it would flush to 0. Each S·g below is exact in f16.
  LossScaleState s;
  s.scale = 65536.0f;
  const std::vector<float> g = {0x1p-30f, 3 * 0x1p-28f, -0x1p-26f, 0x1p-40f, -5 * 0x1p-35f};
  std::vector<float> sg;
  for (float x : g) sg.push_back(x * 65536.0f);
  const Tensor out = good_step(f16_of(sg), s);
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": S·g = " << sg[i] << " in f16, expected g = " << g[i] << " in fp32");
    CHECK(out.data<float>()[i] == g[i]);
  }
}

TEST_CASE("exercise 14.1: a non-finite first or last gradient skips the step as well", "[ch14]") {
  // The ends of the loop: a check that starts at 1 or stops at n - 1 misses exactly these.
  for (const std::size_t at : {std::size_t{0}, std::size_t{36}})
    for (const float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      INFO("bad value " << bad << " at element " << at << " of 37: expected a skip, the scale 65536 halved to 32768");
      LossScaleState s;
      s.scale = 65536.0f;
      std::vector<float> v(37, 0.25f);
      v[at] = bad;
      Tensor out = Tensor::empty({37});
      CHECK_FALSE(unscale_and_update(f16_of(v), out, s));
      CHECK(s.scale == 32768.0f);
      CHECK(s.skipped_steps == 1);
      CHECK(s.good_steps == 0);
    }
}

TEST_CASE("exercise 14.1: large finite f32 and bf16 gradients are no overflow", "[ch14]") {
  // Only inf and NaN skip a step. f16's largest finite value, 65504, is no limit for gradients
  // held in f32 or bf16 (whose range is f32's): 2^20 and -2^100, unscaled by S = 2, are a good step.
  for (const DType dt : {DType::f32, DType::bf16}) {
    LossScaleState s;
    s.scale = 2.0f;
    const std::vector<float> v = {0x1p20f, -0x1p100f, 1.0f};
    INFO(dtype_name(dt) << " gradients {2^20, -2^100, 1} at S = 2: expected a good step giving {2^19, -2^99, 0.5}");
    const Tensor out = good_step(tensor_of(v, dt), s);
    CHECK(out.to_floats() == std::vector<float>{0x1p19f, -0x1p99f, 0.5f});
    CHECK(s.skipped_steps == 0);
    CHECK(s.scale == 2.0f);
  }
}

TEST_CASE("exercise 14.1: f32 and bf16 gradients work the same way", "[ch14]") {
  for (const DType dt : {DType::f32, DType::bf16}) {
    LossScaleState s;
    s.scale = 8.0f;
    const std::vector<float> v = {8.0f, -4.0f, 0.5f};
    const Tensor out = good_step(tensor_of(v, dt), s);
    CHECK(out.to_floats() == std::vector<float>{1.0f, -0.5f, 0.0625f});
  }
}

TEST_CASE("exercise 14.1: a bad configuration is refused with its exact text, before anything changes", "[ch14]") {
  struct Bad {
    const char* what;
    void (*set)(LossScaleState&);
    const char* message;
  };
  const Bad cases[] = {
      {"scale 1000", [](LossScaleState& s) { s.scale = 1000.0f; }, "loss scaling: scale must be a power of two, got 1000"},
      {"scale 0", [](LossScaleState& s) { s.scale = 0.0f; }, "loss scaling: scale must be a power of two, got 0"},
      {"scale inf", [](LossScaleState& s) { s.scale = std::numeric_limits<float>::infinity(); },
       "loss scaling: scale must be a power of two, got inf"},
      {"scale -2", [](LossScaleState& s) { s.scale = -2.0f; }, "loss scaling: scale must be a power of two, got -2"},
      {"min_scale 3", [](LossScaleState& s) { s.min_scale = 3.0f; }, "loss scaling: min_scale must be a power of two, got 3"},
      {"max_scale 0", [](LossScaleState& s) { s.max_scale = 0.0f; }, "loss scaling: max_scale must be a power of two, got 0"},
      {"scale below min_scale", [](LossScaleState& s) { s.scale = 2.0f, s.min_scale = 4.0f; },
       "loss scaling: scale 2 is outside [min_scale 4, max_scale 4.29497e+09]"},
      {"scale above max_scale", [](LossScaleState& s) { s.scale = 0x1p33f; },
       "loss scaling: scale 8.58993e+09 is outside [min_scale 1, max_scale 4.29497e+09]"},
      {"min_scale above max_scale", [](LossScaleState& s) { s.scale = 4.0f, s.min_scale = 8.0f, s.max_scale = 4.0f; },
       "loss scaling: scale 4 is outside [min_scale 8, max_scale 4]"},
      {"growth 1", [](LossScaleState& s) { s.growth = 1.0f; }, "loss scaling: growth must be a power of two above 1, got 1"},
      {"growth 3", [](LossScaleState& s) { s.growth = 3.0f; }, "loss scaling: growth must be a power of two above 1, got 3"},
      {"growth 0.5", [](LossScaleState& s) { s.growth = 0.5f; }, "loss scaling: growth must be a power of two above 1, got 0.5"},
      {"backoff 1", [](LossScaleState& s) { s.backoff = 1.0f; }, "loss scaling: backoff must be a power of two below 1, got 1"},
      {"backoff 0.75", [](LossScaleState& s) { s.backoff = 0.75f; },
       "loss scaling: backoff must be a power of two below 1, got 0.75"},
      {"backoff 2", [](LossScaleState& s) { s.backoff = 2.0f; }, "loss scaling: backoff must be a power of two below 1, got 2"},
      {"growth_interval 0", [](LossScaleState& s) { s.growth_interval = 0; },
       "loss scaling: growth_interval must be >= 1, got 0"},
      {"good_steps = growth_interval", [](LossScaleState& s) { s.growth_interval = 5, s.good_steps = 5; },
       "loss scaling: good_steps must be in [0, growth_interval), got 5"},
      {"good_steps -1", [](LossScaleState& s) { s.good_steps = -1; },
       "loss scaling: good_steps must be in [0, growth_interval), got -1"},
      {"scale 1000 and backoff 0.75: the first rule first", [](LossScaleState& s) { s.scale = 1000.0f, s.backoff = 0.75f; },
       "loss scaling: scale must be a power of two, got 1000"},
  };
  for (const Bad& bad : cases)
    for (const float first : {0.25f, std::numeric_limits<float>::infinity()}) {  // a good step, an overflow
      INFO("exercise 14.1: " << bad.what << " (first gradient " << first << "): expected UsageError \"" << bad.message
                             << "\" with the state unchanged");
      LossScaleState s;
      bad.set(s);
      const LossScaleState before = s;
      Tensor out = Tensor::empty({3});
      CHECK_THROWS_MATCHES(unscale_and_update(f16_of({first, 0.5f, 1.0f}), out, s), UsageError,
                           Catch::Matchers::Message(bad.message));
      CHECK(same_state(s, before));
    }
  // The output's shape: an Error (not bad input: the caller's bug) naming what is wrong.
  LossScaleState s;
  Tensor narrow = Tensor::empty({3}, DType::f16), short_one = Tensor::empty({2});
  for (Tensor* out : {&narrow, &short_one})
    CHECK_THROWS_WITH(unscale_and_update(f16_of({1, 2, 3}), *out, s),
                      Catch::StartsWith("unscale_and_update: unscaled must be f32 with as many elements as the gradients"));
}

TEST_CASE("exercise 14.1: the scale backs off and grows by the configured factors, within [min_scale, max_scale]",
          "[ch14]") {
  const std::vector<float> good(5, 0.5f), bad = {0.5f, 0.5f, std::numeric_limits<float>::infinity(), 0.5f, 0.5f};
  Tensor out = Tensor::empty({5});
  SECTION("backoff 0.25 and growth 4, far from the bounds") {
    LossScaleState s;
    s.scale = 0x1p16f, s.backoff = 0.25f, s.growth = 4.0f, s.growth_interval = 2;
    INFO("exercise 14.1: an overflow at 2^16 with backoff 0.25: expected 2^14");
    CHECK_FALSE(unscale_and_update(f16_of(bad), out, s));
    CHECK(s.scale == 0x1p14f);
    CHECK(unscale_and_update(f16_of(good), out, s));
    CHECK(unscale_and_update(f16_of(good), out, s));
    INFO("exercise 14.1: two good steps at 2^14 with growth 4, interval 2: expected 2^16");
    CHECK(s.scale == 0x1p16f);
    CHECK(out.to_floats() == std::vector<float>(5, 0.5f * 0x1p-14f));  // this step divided by the old scale
  }
  SECTION("backoff stops at min_scale; an overflow at min_scale is a diverged run") {
    LossScaleState s;
    s.scale = 8192.0f, s.min_scale = 4096.0f, s.backoff = 0.25f;
    INFO("exercise 14.1: an overflow at 8192, backoff 0.25, min_scale 4096: expected the scale 4096, not 2048");
    CHECK_FALSE(unscale_and_update(f16_of(bad), out, s));
    CHECK(s.scale == 4096.0f);
    CHECK(s.skipped_steps == 1);
    const LossScaleState before = s;
    INFO("exercise 14.1: an overflow at min_scale 4096: expected usp::Error, the state unchanged");
    CHECK_THROWS_MATCHES(unscale_and_update(f16_of(bad), out, s), Error,
                         Catch::Matchers::Message("loss scaling: the gradients overflow at min_scale 4096; the run has diverged"));
    CHECK(same_state(s, before));
    // The default min_scale is 1: an fp16 run whose gradients overflow even unscaled.
    LossScaleState one;
    one.scale = 1.0f;
    CHECK_THROWS_MATCHES(unscale_and_update(f16_of(bad), out, one), Error,
                         Catch::Matchers::Message("loss scaling: the gradients overflow at min_scale 1; the run has diverged"));
  }
  SECTION("growth stops at max_scale, and the count starts again there") {
    LossScaleState s;
    s.scale = 0x1p19f, s.max_scale = 0x1p20f, s.growth = 4.0f, s.growth_interval = 1;
    INFO("exercise 14.1: a good step at 2^19, growth 4, max_scale 2^20: expected the scale 2^20, not 2^21");
    CHECK(unscale_and_update(f16_of(good), out, s));
    CHECK(s.scale == 0x1p20f);
    CHECK(s.good_steps == 0);
    CHECK(unscale_and_update(f16_of(good), out, s));
    CHECK(s.scale == 0x1p20f);
    CHECK(s.good_steps == 0);
    CHECK(out.to_floats() == std::vector<float>(5, 0.5f * 0x1p-20f));
  }
}

TEST_CASE("the formats: constants, and every narrow bit pattern round-trips", "[ch14]") {
  const std::vector<FormatRow> rows = format_rows();
  REQUIRE(rows.size() == 5);
  const FormatRow &bf16 = rows[1], &f16 = rows[2], &e4m3 = rows[3], &e5m2 = rows[4];
  CHECK(e4m3.info.max_finite == 448.0f);
  CHECK(e5m2.info.max_finite == 57344.0f);
  CHECK(f16.info.max_finite == 65504.0f);
  CHECK(f16.info.min_subnormal == 0x1p-24f);
  CHECK(e4m3.info.min_subnormal == 0x1p-9f);
  CHECK(e5m2.info.min_subnormal == 0x1p-16f);
  // Finite patterns: all but the all-ones exponent (2 signs × 2^m) for the IEEE-like formats;
  // e4m3 gives up only its two NaNs (S.1111.111).
  CHECK(bf16.finite == 65536 - 2 * 128);
  CHECK(f16.finite == 65536 - 2 * 1024);
  CHECK(e4m3.finite == 256 - 2);
  CHECK(e5m2.finite == 256 - 2 * 4);
  for (const FormatRow& r : rows) {
    INFO(r.info.name);
    CHECK(r.round_trip == r.finite);
    CHECK(r.in_1_2 == (std::int64_t{1} << r.info.mantissa_bits) + 1);  // 1, 1 + ε, ..., 2
  }
  const std::string grid = grid_table(rows).csv();
  CHECK(std::count(grid.begin(), grid.end(), '\n') == 1 + 129 + 1025 + 9 + 5);
  CHECK(grid.find("e4m3,1.125\n") != std::string::npos);
  CHECK(grid.find("e5m2,1.75\n") != std::string::npos);
}

namespace {

TrainingConfig small_config(std::int64_t steps) {
  return testing::small_training(testing::small_model({.name = "precision-test", .vocab = 256, .hidden = 96,
                                                       .layers = 2, .heads = 4, .kv_heads = 2, .ffn = 200}),
                                 /*seq=*/48, /*mbs=*/2, steps);
}

}  // namespace

TEST_CASE("bf16 and fp16 training track fp32; fp16 without scaling loses gradients to underflow", "[ch14]") {
  const TrainingConfig cfg = small_config(6);
  const auto data = make_dataset("synthetic", cfg.seed);
  LossScaleState scaler;
  scaler.growth_interval = 1000;
  const PrecisionRun f32 = train_recipe(Recipe::fp32, cfg, *data, scaler);
  const PrecisionRun b16 = train_recipe(Recipe::bf16, cfg, *data, scaler);
  const PrecisionRun h16 = train_recipe(Recipe::fp16, cfg, *data, scaler);
  const PrecisionRun s16 = train_recipe(Recipe::fp16_scaled, cfg, *data, scaler);
  for (std::size_t s = 0; s < f32.losses.size(); ++s) {
    INFO("step " << s << ": fp32 " << f32.losses[s] << ", bf16 " << b16.losses[s] << ", fp16 " << h16.losses[s]
                 << ", fp16+scaling " << s16.losses[s]);
    // bf16 keeps 8 significant bits: every stored weight and activation is off by up to 2^-9 ≈ 0.2%
    // relative, and so is the loss while training is smooth; fp16 (11 bits) 8× less.
    CHECK(std::fabs(b16.losses[s] - f32.losses[s]) <= 2e-3 * f32.losses[s]);
    CHECK(std::fabs(h16.losses[s] - f32.losses[s]) <= 2.5e-4 * f32.losses[s]);
    CHECK(std::fabs(s16.losses[s] - f32.losses[s]) <= 2.5e-4 * f32.losses[s]);
  }
  CHECK(f32.losses.back() < f32.losses.front());
  // Underflow, measured on the first step's gradients (the same weights up to rounding): fp32 has
  // no subnormals; unscaled fp16 holds many and flushes some to zero; scaled by 2^16 none.
  CHECK(f32.subnormal_fraction[0] == 0.0);
  CHECK(h16.subnormal_fraction[0] > 0.05);
  CHECK(h16.zero_fraction[0] > f32.zero_fraction[0]);
  CHECK(s16.subnormal_fraction[0] == 0.0);
  CHECK(s16.zero_fraction[0] == f32.zero_fraction[0]);
  CHECK(s16.skipped_steps == 0);
  // Nothing overflows at these scales: no inf, no NaN in any recipe's gradients.
  for (const PrecisionRun* r : {&f32, &b16, &h16, &s16})
    for (std::size_t s = 0; s < r->inf_fraction.size(); ++s) {
      INFO(r->recipe << " step " << s);
      CHECK(r->inf_fraction[s] == 0.0);
      CHECK(r->nan_fraction[s] == 0.0);
    }
}

TEST_CASE("memory per parameter: the tracker's bytes are the calculator's, recipe by recipe", "[ch14]") {
  const TrainingConfig cfg = small_config(1);
  const auto data = make_dataset("synthetic", cfg.seed);
  for (Recipe r : {Recipe::fp32, Recipe::bf16, Recipe::fp16, Recipe::fp16_scaled}) {
    const StateMemory m = train_recipe(r, cfg, *data).memory;
    const CalcRow row = calc_row(r);
    const std::int64_t n = m.parameters_numel;
    INFO(recipe_name(r) << " (usp_calc " << row.flags << "), " << n << " parameters: measured parameters "
                        << m.parameters << ", gradients " << m.gradients << ", optimizer " << m.optimizer
                        << ", step extra " << m.step_extra << " bytes");
    REQUIRE(n == cfg.model.num_parameters());
    CHECK(m.parameters == row.bytes.parameters * n);
    CHECK(m.optimizer == row.bytes.optimizer * n);
    if (r == Recipe::fp16_scaled) {
      // The calculator's fp32 gradient buffer (+4 bytes) is the unscaled copy, alive during the step.
      CHECK(m.gradients == 2 * n);
      CHECK(m.gradients + m.step_extra == row.bytes.gradients * n);
    } else {
      // Narrow gradients are widened in blocks: the optimizer step allocates nothing.
      CHECK(m.gradients == row.bytes.gradients * n);
      CHECK(m.step_extra == 0);
    }
  }
}

TEST_CASE("a loss scale too large skips steps, halving until the gradients fit", "[ch14]") {
  const TrainingConfig cfg = small_config(14);
  const auto data = make_dataset("synthetic", cfg.seed);
  LossScaleState scaler;
  scaler.scale = 0x1p26f;  // the largest scaled gradients overflow fp16's 65504 at first
  scaler.growth_interval = 1000;
  const PrecisionRun run = train_recipe(Recipe::fp16_scaled, cfg, *data, scaler);
  REQUIRE_FALSE(run.applied[0]);
  std::size_t first_applied = 0;
  while (first_applied < run.applied.size() && !run.applied[first_applied]) ++first_applied;
  REQUIRE(first_applied < run.applied.size());  // it found a scale that fits within 14 steps
  CHECK(first_applied >= 2);  // S·g overflowed more than once on the way down
  // Every skip halves the scale for the next step; every applied step keeps it (no growth within
  // 1000 steps); the count of skips is the count of halvings.
  std::int64_t skips = 0;
  for (std::size_t s = 0; s + 1 < run.scales.size(); ++s) {
    INFO("step " << s);
    CHECK(run.scales[s + 1] == (run.applied[s] ? run.scales[s] : run.scales[s] / 2));
    skips += run.applied[s] ? 0 : 1;
  }
  if (!run.applied.back()) ++skips;
  CHECK(run.skipped_steps == skips);
  // The census says why each step skipped: every skipped step's gradients hold an inf or a NaN,
  // every applied one none; the first step's histogram counts them apart from every binade (the
  // binades hold exactly the finite nonzero elements).
  for (std::size_t s = 0; s < run.applied.size(); ++s) {
    INFO("step " << s << ": inf " << run.inf_fraction[s] << ", NaN " << run.nan_fraction[s]);
    CHECK((run.inf_fraction[s] + run.nan_fraction[s] > 0) == !run.applied[s]);
  }
  CHECK(run.histogram_infs > 0);
  std::int64_t binned = 0;
  for (std::int64_t c : run.log2_histogram) binned += c;
  const auto n = static_cast<std::int64_t>(cfg.model.num_parameters());
  CHECK(binned + run.histogram_zeros + run.histogram_infs + run.histogram_nans == n);
  CHECK(binned == std::llround((1.0 - run.zero_fraction[0] - run.inf_fraction[0] - run.nan_fraction[0]) *
                              static_cast<double>(n)));
  INFO("skipped " << run.skipped_steps << ", losses " << run.losses[0] << " .. " << run.losses.back());
  CHECK(run.losses.back() < run.losses[0]);  // and then it trained
}

// ---- FP8 (exercise 14.2 and the FP8 linears) ----------------------------------------------------

TEST_CASE("exercise 14.2: scales and codes of hand-made tiles", "[ch14]") {
  // 2 × 4 in tiles of 1 × 2: four tiles.
  const std::vector<float> x = {448.0f, 1.0f, 0.0f, 0.0f,  //
                                3.0f, -6.0f, 0.001f, 0.002f};
  const TileGrid g{2, 4, 1, 2};
  std::vector<std::uint8_t> q(8);
  std::vector<float> s(4);
  quantize_tiles(x.data(), g, DType::e4m3, q.data(), s.data());
  CHECK(s[0] == 1.0f);               // amax 448 = e4m3's max: scale 1
  CHECK(s[1] == 1.0f);               // an all-zero tile: scale 1, not 0/448
  CHECK(s[2] == 6.0f / 448.0f);      // amax 6
  CHECK(s[3] == 0.002f / 448.0f);
  CHECK(q[0] == float_to_e4m3(448.0f));
  CHECK(q[1] == float_to_e4m3(1.0f));
  CHECK((q[2] == 0 && q[3] == 0));
  CHECK(e4m3_to_float(q[5]) == -448.0f);  // the tile's amax lands on the format's max
  CHECK(q[4] == float_to_e4m3(3.0f / (6.0f / 448.0f)));
  CHECK(e4m3_to_float(q[7]) == 448.0f);
  std::vector<float> back(8);
  dequantize_tiles(q.data(), s.data(), g, DType::e4m3, back.data());
  CHECK(back[4] == Approx(3.0f).epsilon(1e-6));
  CHECK(back[6] == Approx(0.001f).epsilon(1e-6));  // 224 is exact in e4m3
}

TEST_CASE("exercise 14.2: cut-short edge tiles, the error bound, no saturation", "[ch14]") {
  for (const DType format : {DType::e4m3, DType::e5m2}) {
    INFO(dtype_name(format));
    // 5 × 130 in 2 × 128 tiles: a 3 × 2 grid whose last row and column of tiles are cut short.
    const TileGrid g{5, 130, 2, 128};
    std::vector<float> x(5 * 130);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = rng::normal(11, "fp8", i) * (i % 17 == 0 ? 50.0f : 0.01f);  // values over 12 binades
    std::vector<std::uint8_t> q(x.size());
    std::vector<float> s(static_cast<std::size_t>(g.tiles()), -1.0f);
    quantize_tiles(x.data(), g, format, q.data(), s.data());
    const FormatInfo info = format_info(format);
    // Each tile's scale, recomputed here, and its largest code exactly the format's max.
    for (std::int64_t ti = 0; ti < 3; ++ti)
      for (std::int64_t tj = 0; tj < 2; ++tj) {
        float amax = 0, top = 0;
        for (std::int64_t r = ti * 2; r < std::min<std::int64_t>(ti * 2 + 2, 5); ++r)
          for (std::int64_t c = tj * 128; c < std::min<std::int64_t>(tj * 128 + 128, 130); ++c) {
            const std::size_t i = static_cast<std::size_t>(r * 130 + c);
            amax = std::max(amax, std::fabs(x[i]));
            const float v = format == DType::e4m3 ? e4m3_to_float(q[i]) : e5m2_to_float(q[i]);
            top = std::max(top, std::fabs(v));
          }
        INFO("tile " << ti << ", " << tj);
        CHECK(s[static_cast<std::size_t>(ti * 2 + tj)] == amax / info.max_finite);
        CHECK(top == info.max_finite);
      }
    // Round to nearest: within half a step of the value — 2^-(m+1) of it for a normal code, half
    // the smallest subnormal times the scale below that.
    std::vector<float> back(x.size());
    dequantize_tiles(q.data(), s.data(), g, format, back.data());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float tile_scale = s[static_cast<std::size_t>((static_cast<std::int64_t>(i) / 130 / 2) * 2 +
                                                          (static_cast<std::int64_t>(i) % 130) / 128)];
      const double bound = std::max(static_cast<double>(std::ldexp(std::fabs(x[i]), -(info.mantissa_bits + 1))),
                                    0.5 * static_cast<double>(info.min_subnormal) * tile_scale) * (1 + 1e-6);
      if (!(std::fabs(back[i] - x[i]) <= bound))
        FAIL("element " << i << ": " << x[i] << " came back as " << back[i] << " (bound " << bound << ")");
    }
  }
}

TEST_CASE("exercise 14.2: one outlier ruins a per-tensor scale, not a per-tile one", "[ch14]") {
  std::vector<float> x(1024);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1e-3f * (1.0f + 0.5f * rng::uniform(12, "small", i));
  x[700] = 1000.0f;
  std::vector<std::uint8_t> q(1024);
  std::vector<float> s(8);
  auto zeros = [&](const TileGrid& g) {
    quantize_tiles(x.data(), g, DType::e4m3, q.data(), s.data());
    return std::count(q.begin(), q.end(), std::uint8_t{0});
  };
  // Per tensor: s = 1000/448, and 1e-3 / s ≈ 4.5e-4 is below half of e4m3's smallest subnormal.
  CHECK(zeros({1, 1024, 1, 1024}) == 1023);
  // 1 × 128 tiles: only the outlier's own tile loses its small values.
  CHECK(zeros({1, 1024, 1, 128}) == 127);
}

TEST_CASE("exercise 14.2: a non-finite element, a bad grid, a non-FP8 format are refused", "[ch14]") {
  // 3 × 5 in tiles of 2 × 2: the bad element sits in the last, cut-short tile (row 2, column 4),
  // after larger values of its tile, so a max that lets NaN through would hide it.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const TileGrid g{3, 5, 2, 2};
  std::vector<std::uint8_t> q(15);
  std::vector<float> s(static_cast<std::size_t>(g.tiles()));
  for (const float bad : {kInf, -kInf, std::nanf("")}) {
    std::vector<float> x(15, 0.5f);
    x[0] = 7.0f;
    x[2 * 5 + 4] = bad;
    const std::string want = "quantize_tiles: x[2][4] = " + std::to_string(bad) + " is not finite";
    INFO("exercise 14.2: x[2][4] = " << bad << ", expected the error \"" << want << "\"");
    CHECK_THROWS_MATCHES(quantize_tiles(x.data(), g, DType::e4m3, q.data(), s.data()), Error,
                         Catch::Matchers::Message(want));
  }
  const std::vector<float> x(15, 1.0f);
  for (const TileGrid bad : {TileGrid{3, 5, 0, 2}, TileGrid{3, 5, 2, 0}, TileGrid{-1, 5, 2, 2}}) {
    const std::string want = "quantize_tiles: bad tile grid " + std::to_string(bad.rows) + "×" +
                             std::to_string(bad.cols) + " in tiles of " + std::to_string(bad.tile_rows) + "×" +
                             std::to_string(bad.tile_cols);
    INFO("exercise 14.2: expected the error \"" << want << "\"");
    CHECK_THROWS_MATCHES(quantize_tiles(x.data(), bad, DType::e5m2, q.data(), s.data()), Error,
                         Catch::Matchers::Message(want));
  }
  INFO("exercise 14.2: format bf16, expected the error \"quantize_tiles: format must be e4m3 or e5m2\"");
  CHECK_THROWS_MATCHES(quantize_tiles(x.data(), g, DType::bf16, q.data(), s.data()), Error,
                       Catch::Matchers::Message("quantize_tiles: format must be e4m3 or e5m2"));
}

TEST_CASE("FP8 linears: direct casting flushes the gradients, scaled FP8 trains like fp32", "[ch14]") {
  const TrainingConfig cfg = small_config(5);
  const auto data = make_dataset("synthetic", cfg.seed);
  const PrecisionRun f32 = train_recipe(Recipe::fp32, cfg, *data);
  const Fp8Run direct = train_fp8(Fp8Scaling::direct, cfg, *data);
  const Fp8Run tensor = train_fp8(Fp8Scaling::per_tensor, cfg, *data);
  const Fp8Run tiled = train_fp8(Fp8Scaling::tiled, cfg, *data);
  // e5m2's smallest subnormal is 2^-16 ≈ 1.5e-5; a large share of the activation gradients is
  // smaller (19% for this model, 90% for usp-small), and without a scale they vanish.
  CHECK(direct.gradients.flushed_fraction() > 0.1);
  CHECK(tensor.gradients.flushed_fraction() < 0.01);
  CHECK(tiled.gradients.flushed_fraction() < 0.01);
  CHECK(tiled.activations.flushed_fraction() <= tensor.activations.flushed_fraction());
  for (std::size_t s = 0; s < f32.losses.size(); ++s) {
    INFO("step " << s << ": fp32 " << f32.losses[s] << ", tiled " << tiled.losses[s] << ", per-tensor "
                 << tensor.losses[s] << ", direct " << direct.losses[s]);
    // e4m3 keeps 4 significant bits: each operand is off by up to 2^-4 relative, but the errors of a
    // C-term dot product average out; the loss moves by ~1e-3 relative per step here. 1% over 5 steps.
    CHECK(std::fabs(tiled.losses[s] - f32.losses[s]) <= 1e-2 * f32.losses[s]);
    CHECK(std::fabs(tensor.losses[s] - f32.losses[s]) <= 1e-2 * f32.losses[s]);
  }
}

TEST_CASE("the FP8 GEMM's operands are checked on the host: shapes, null and misaligned pointers", "[ch14]") {
  // Pointer values only, never dereferenced: 16-byte aligned addresses in one buffer.
  alignas(64) static unsigned char buffer[512];
  auto at = [](std::size_t offset) { return buffer + offset; };
  fp8::Fp8Gemm g{32, 48, 64, at(0), at(64), reinterpret_cast<const float*>(at(128)),
                 reinterpret_cast<const float*>(at(144)), reinterpret_cast<std::uint16_t*>(at(160))};
  CHECK_NOTHROW(fp8::check_fp8_gemm(g));
  auto refused = [](fp8::Fp8Gemm bad, const std::string& words) {
    INFO("expected a refusal naming \"" << words << "\"");
    try {
      fp8::check_fp8_gemm(bad);
      FAIL("check_fp8_gemm accepted it");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(words));
    }
  };
  // What ran on an H100 and cuBLASLt refused: both scales in one allocation, the second 4 bytes in.
  fp8::Fp8Gemm shared = g;
  shared.scale_b = shared.scale_a + 1;
  refused(shared, "scale_b at 4 bytes past a 16-byte boundary");
  fp8::Fp8Gemm a_off = g;
  a_off.A = at(8);
  refused(a_off, "A at 8 bytes");
  fp8::Fp8Gemm no_d = g;
  no_d.D = nullptr;
  refused(no_d, "D is null");
  fp8::Fp8Gemm odd = g;
  odd.K = 72;
  refused(odd, "multiples of 16");
}

TEST_CASE("cuBLASLt's FP8 GEMM computes the product of the dequantised operands", "[ch14][gpu]") {
  if (!fp8_gemm_available()) {
    WARN("no GPU with FP8 tensor cores (compute capability 8.9+): skipped");
    return;
  }
  // 208 × 144 × 272: multiples of 16 (cuBLASLt's FP8 requirement), of nothing larger.
  const Fp8GemmRun r = run_fp8_gemm(208, 144, 272, 0);
  INFO("e4m3 " << r.fp8_error << ", bf16 " << r.bf16_error << ", e4m3 vs fp32 " << r.fp8_vs_fp32);
  // Against the CPU's fp32 product of exactly the operands each GPU product multiplied, what is
  // left is the order of 272 fp32 additions (~1e-6) and y's rounding to bf16 (at most 2^-9 of an
  // element, so 2^-9 of max |y|): 2^-8 leaves room for the first.
  CHECK(r.fp8_error <= std::ldexp(1.0, -8));
  CHECK(r.bf16_error <= std::ldexp(1.0, -8));
  // Against the unquantised product, e4m3's 3 mantissa bits (2^-4 relative per operand) show.
  CHECK(r.fp8_vs_fp32 > r.fp8_error);
  CHECK(r.fp8_vs_fp32 < 0.1);
}
