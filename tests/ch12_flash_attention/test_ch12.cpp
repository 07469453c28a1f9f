// Chapter 12: flash attention on the CPU. Exercise 12.1 (the online softmax of one tile) and 12.2
// (one tile pair of the backward) against hand-worked numbers and against the direct formulas;
// the whole tiled attention against the naive one — outputs, log-sum-exp and gradients, causal and
// not, fp32 and bf16 inputs, on shapes that are no tile multiple, with GQA; its extra memory flat
// in T where the naive attention's grows as T²; the model trained with it gives the same losses.
// [gpu]: the model on CUDA with the flash hook (the ladder's FA2 kernels) gives the CPU's losses.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "chapters/12_flash_attention/equivalence.hpp"
#include "chapters/12_flash_attention/flash_attention.hpp"
#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "chapters/12_flash_attention/flash_training.hpp"
#include "common/device.hpp"
#include "common/memory_tracker.hpp"
#include "common/ops/ops.hpp"
#include "tests/support/small_model.hpp"

using namespace usp;
using namespace usp::ch12;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("exercise 12.1: one tile folded into the running softmax, by hand", "[ch12]") {
  // Two rows, d = 1. Row 0 first sees scores {0, log 3} with v {1, 2}: m = log 3, l = 1/3 + 1,
  // acc = 1/3·1 + 1·2. Row 1 sees only masked keys: it must stay (−inf, 0, 0).
  float s1[] = {0.0f, std::log(3.0f), -kInf, -kInf};
  const float v1[] = {1.0f, 2.0f};
  float m[] = {-kInf, -kInf}, l[] = {0, 0}, acc[] = {0, 0};
  online_softmax_update(s1, v1, 2, 2, 1, m, l, acc);
  CHECK(m[0] == Approx(std::log(3.0)));
  CHECK(l[0] == Approx(4.0 / 3));
  CHECK(acc[0] == Approx(7.0 / 3));
  CHECK((m[1] == -kInf && l[1] == 0 && acc[1] == 0));
  CHECK(s1[1] == Approx(1.0));  // s now holds exp(s - m): the tile's unnormalised probabilities
  CHECK(s1[0] == Approx(1.0 / 3));
  // Row 1's probabilities are 0 (it sees no key), never -inf or NaN: s leaves the call as
  // probabilities on every row.
  INFO("exercise 12.1: s[1][j] of the row that saw only masked keys must be its probability, 0");
  CHECK(s1[2] == 0.0f);
  CHECK(s1[3] == 0.0f);
  // A second tile of one key (v = 4), scored log 6 by row 0 and 0 by row 1: row 0's old sums are
  // rescaled by exp(log 3 − log 6) = 1/2: l = 4/6 + 1, acc = 7/6 + 4; row 1 starts: (0, 1, 4).
  float s2[] = {std::log(6.0f), 0.0f};
  const float v2[] = {4.0f};
  float m2[] = {m[0], m[1]};
  online_softmax_update(s2, v2, 2, 1, 1, m2, l, acc);
  CHECK(m2[0] == Approx(std::log(6.0)));
  CHECK(l[0] == Approx(4.0 / 6 + 1));
  CHECK(acc[0] == Approx(7.0 / 6 + 4));
  CHECK(acc[0] / l[0] == Approx((1 * 1.0 + 2 * 3.0 + 4 * 6.0) / (1 + 3 + 6.0)));  // softmax-weighted v
  CHECK((m2[1] == 0 && l[1] == 1 && acc[1] == 4));
}

TEST_CASE("exercise 12.2: one tile pair's gradients equal the direct formulas", "[ch12]") {
  // 3 queries at positions 5..7 and 4 keys at 4..7 (causal: query i sees keys up to its position),
  // d = 2; lse and delta given (any values: the formulas are linear in what they are given).
  const int rows = 3, cols = 4, d = 2;
  const float q[] = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.7f};
  const float k[] = {0.2f, 0.4f, -0.1f, 0.3f, 0.6f, -0.5f, 0.0f, 0.2f};
  const float v[] = {1.0f, 0.5f, -0.5f, 0.2f, 0.3f, 0.9f, -0.7f, 0.1f};
  const float dout[] = {0.2f, -0.3f, 0.4f, 0.1f, -0.6f, 0.5f};
  const float lse[] = {1.1f, 0.9f, 1.3f}, delta[] = {0.05f, -0.02f, 0.1f};
  const float scale = 0.7f;
  for (bool causal : {true, false}) {
    std::vector<float> dq(rows * d, 0.5f), dk(cols * d, -0.25f), dv(cols * d, 0.125f);  // they accumulate
    std::vector<double> wq(dq.begin(), dq.end()), wk(dk.begin(), dk.end()), wv(dv.begin(), dv.end());
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        if (causal && 4 + j > 5 + i) continue;
        double s = 0, dp = 0;
        for (int e = 0; e < d; ++e) s += q[i * d + e] * k[j * d + e], dp += dout[i * d + e] * v[j * d + e];
        const double p = std::exp(s * scale - lse[i]), ds = p * (dp - delta[i]);
        for (int e = 0; e < d; ++e) {
          wv[j * d + e] += p * dout[i * d + e];
          wq[i * d + e] += scale * ds * k[j * d + e];
          wk[j * d + e] += scale * ds * q[i * d + e];
        }
      }
    std::vector<float> p_scratch(rows * cols, NAN), dp_scratch(rows * cols, NAN);  // undefined on entry
    tile_backward({q, k, v, dout, lse, delta, p_scratch.data(), dp_scratch.data(), rows, cols, d, scale, causal, 5, 4},
                  {dq.data(), dk.data(), dv.data()});
    for (std::size_t e = 0; e < dq.size(); ++e) CHECK(dq[e] == Approx(wq[e]).margin(1e-6));
    for (std::size_t e = 0; e < dk.size(); ++e) CHECK(dk[e] == Approx(wk[e]).margin(1e-6));
    for (std::size_t e = 0; e < dv.size(); ++e) CHECK(dv[e] == Approx(wv[e]).margin(1e-6));
  }
}

TEST_CASE("flash attention equals the naive attention: outputs, lse, gradients; causal and not; fp32, bf16", "[ch12]") {
  // T = 37 with 16 × 8 tiles (no multiple), D = 20, 4 query heads on 2 kv heads. fp32: both sides
  // compute in fp32 from the same inputs; only the order of the sums differs (the online softmax
  // rescales partial sums, the backward adds tile by tile): a few ulps of O(1) values, bounded by
  // 1e-5. bf16 inputs: both sides widen the same bf16 values, compute in fp32 and round their
  // outputs to bf16; two fp32 values a few ulps apart round to the same bf16 value or to
  // neighbours: at most one bf16 ulp apart, 2^-7 of the binade [2^e, 2^(e+1)) of the largest value.
  for (const Equivalence& e : check_equivalence({16, 8})) {
    INFO(e.what << ": out " << e.out << " lse " << e.lse << " dq " << e.dq << " dk " << e.dk << " dv " << e.dv);
    if (e.dtype == DType::f32) {
      CHECK(e.largest() <= 1e-5);
    } else {
      const double ulp = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(e.magnitude))) - 7);
      CHECK(std::max({e.out, e.dq, e.dk, e.dv}) <= ulp);
      CHECK(e.lse <= 1e-5);
    }
  }
  // Tiles larger than the sequence and 1 × 1 tiles are the same computation.
  for (FlashTiles t : {FlashTiles{64, 64}, FlashTiles{1, 1}, FlashTiles{5, 37}})
    for (const Equivalence& e : check_equivalence(t))
      if (e.dtype == DType::f32) CHECK(e.largest() <= 1e-5);
}

TEST_CASE("flash attention's extra memory is flat in T; the naive attention's grows as T²", "[ch12]") {
  MemoryTracker& tracker = MemoryTracker::instance();
  const FlashTiles tiles{16, 16};
  auto extra = [&](std::int64_t T, bool flash) {
    const Shape s{1, T, 2, 8};
    const Tensor q = Tensor::zeros(s), k = Tensor::zeros(s), v = Tensor::zeros(s), dout = Tensor::zeros(s);
    Tensor out = Tensor::empty(s), dq = Tensor::empty(s), dk = Tensor::empty(s), dv = Tensor::empty(s);
    const std::int64_t before = tracker.current().total();
    tracker.reset_peak();
    if (flash) {
      Tensor lse = Tensor::empty({1, 2, T});
      flash_attention_forward(q, k, v, true, tiles, out, lse);
      flash_attention_backward(dout, q, k, v, out, lse, true, tiles, dq, dk, dv);
      return tracker.peak_total() - before - static_cast<std::int64_t>(lse.nbytes());  // the lse is kept; the rest is scratch
    }
    Tensor probs = Tensor::empty({1, 2, T, T});
    ops::attention_forward(q, k, v, out, probs);
    ops::attention_backward(dout, q, k, v, probs, dq, dk, dv);
    return tracker.peak_total() - before;
  };
  // Flash: the same tiles at every T — q, dout, out, dq tiles and delta (16 rows), k, v, dk, dv
  // tiles and their sums (16 keys), 16 × 16 scores, m, l and acc: exactly equal at T = 64 and 512.
  CHECK(extra(64, true) == extra(512, true));
  CHECK(extra(64, true) < 64 * 1024);
  // Naive: P alone is 2·T² floats; 8× the T is at least 64× the bytes beyond it.
  const std::int64_t n64 = extra(64, false), n512 = extra(512, false);
  CHECK(n64 >= 2 * 64 * 64 * 4);
  CHECK(n512 >= 2 * 512 * 512 * 4);
  CHECK(n512 >= 60 * n64);
}

TEST_CASE("the model trained with flash attention gives the naive attention's losses", "[ch12]") {
  TrainingConfig cfg;
  cfg.model = testing::small_model(
      {.name = "flash-test", .vocab = 256, .hidden = 32, .layers = 2, .heads = 4, .kv_heads = 2, .ffn = 40});
  cfg.seq = 45;
  cfg.mbs = 2;
  cfg.steps = 3;
  const auto data = make_dataset("synthetic", cfg.seed);
  const TrainingRun naive = train_with(cfg, *data, false, {16, 8}), flash = train_with(cfg, *data, true, {16, 8});
  REQUIRE(naive.losses.size() == 3);
  // The attention's rounding (above, ≤ 1e-5 of O(1) values) through 3 AdamW steps: the loss moves
  // by about lr per step; a gap above 1e-5 relative is a wrong attention, not rounding.
  for (std::size_t s = 0; s < naive.losses.size(); ++s)
    CHECK(std::fabs(flash.losses[s] - naive.losses[s]) <= 1e-5 * naive.losses[s]);
  // Flash keeps [B, H, T] log-sum-exps instead of [B, H, T, T] probabilities per layer.
  CHECK(naive.peak_activation_bytes - flash.peak_activation_bytes ==
        cfg.model.layers * (2 * 4 * 45 * 45 * 4 - 2 * 4 * 45 * 4));
}

TEST_CASE("the model on CUDA with flash attention (the FA2 kernels) gives the CPU's losses", "[ch12][gpu]") {
  if (cuda_device_count() == 0) {
    WARN("no CUDA device: skipped");
    return;
  }
  TrainingConfig cfg;
  cfg.model = testing::small_model(
      {.name = "flash-test", .vocab = 256, .hidden = 32, .layers = 2, .heads = 4, .kv_heads = 2, .ffn = 40});
  cfg.seq = 45;  // under the kernels' 64-row tiles: masked tails in every tile
  cfg.mbs = 2;
  cfg.steps = 3;
  const auto data = make_dataset("synthetic", cfg.seed);
  const TrainingRun cpu = train_with(cfg, *data, true, {16, 8});
  cfg.device = Device::cuda(0);
  const TrainingRun gpu = train_with(cfg, *data, true, {16, 8}), gpu_naive = train_with(cfg, *data, false, {16, 8});
  REQUIRE(gpu.losses.size() == 3);
  // fp32 on both sides in other summation orders (tests/model/test_model_cuda.cpp: 1e-5 of the loss
  // over three steps), and the same lse-for-probabilities trade on the device's tracker.
  for (std::size_t s = 0; s < cpu.losses.size(); ++s) {
    INFO("step " << s << ": CPU " << cpu.losses[s] << ", CUDA " << gpu.losses[s]);
    CHECK(std::fabs(gpu.losses[s] - cpu.losses[s]) <= 1e-5 * cpu.losses[s]);
  }
  CHECK(gpu_naive.peak_activation_bytes - gpu.peak_activation_bytes ==
        cfg.model.layers * (2 * 4 * 45 * 45 * 4 - 2 * 4 * 45 * 4));
}
