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
#include "tests/support/small_training.hpp"

using namespace usp;
using namespace usp::ch12;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

// The model both training cases run; T = 45 is under the kernels' 64-row tiles: masked tails in
// every tile.
TrainingConfig flash_training() {
  return testing::small_training(
      testing::small_model(
          {.name = "flash-test", .vocab = 256, .hidden = 32, .layers = 2, .heads = 4, .kv_heads = 2, .ffn = 40}),
      /*seq=*/45, /*mbs=*/2, /*steps=*/3);
}

}  // namespace

namespace {

// Runs exercise 12.1 on one query tile with NaN-filled scratch (its contents are undefined on
// entry) and keys/values stored `ld` = 2 floats apart with NaN between them (d = 1), so that a
// wrong stride or a read of stale scratch shows.
struct TileRun {
  std::vector<float> out, lse;
};
TileRun run_query_tile(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int cols,
                       bool causal, std::int64_t q0, std::int64_t k0) {
  const int rows = static_cast<int>(q.size()), keys = static_cast<int>(k.size());
  std::vector<float> ks(2 * k.size(), NAN), vs(2 * v.size(), NAN);
  for (std::size_t j = 0; j < k.size(); ++j) ks[2 * j] = k[j], vs[2 * j] = v[j];
  std::vector<float> s(static_cast<std::size_t>(rows * cols), NAN), m(q.size(), NAN), l(q.size(), NAN);
  TileRun r{std::vector<float>(q.size(), NAN), std::vector<float>(q.size(), NAN)};
  flash_query_tile({q.data(), ks.data(), vs.data(), s.data(), m.data(), l.data(), rows, keys, cols, 1, 2, 1.0f, causal, q0,
                    k0},
                   r.out.data(), r.lse.data());
  return r;
}

}  // namespace

TEST_CASE("exercise 12.1: one query tile over three keys in tiles of two, by hand", "[ch12]") {
  // d = 1, scale 1: row 0 (q = 1) scores the keys {0, log 3, log 6}, row 1 (q = 2) {0, 2 log 3,
  // 2 log 6}. Softmax weights 1 : 3 : 6 and 1 : 9 : 36 over the values {1, 2, 4}:
  //   out_0 = (1 + 6 + 24) / 10,  lse_0 = log 10;   out_1 = (1 + 18 + 144) / 46,  lse_1 = log 46.
  // Tiles of 2 keys: the second tile raises each row's maximum, so what the first tile summed
  // must be rescaled.
  const std::vector<float> q{1, 2}, k{0, std::log(3.0f), std::log(6.0f)}, v{1, 2, 4};
  for (int cols : {2, 1, 3, 8}) {
    INFO("exercise 12.1: tiles of " << cols << " keys, not causal");
    const TileRun r = run_query_tile(q, k, v, cols, false, 0, 0);
    CHECK(r.out[0] == Approx(31.0 / 10));
    CHECK(r.lse[0] == Approx(std::log(10.0)));
    CHECK(r.out[1] == Approx(163.0 / 46));
    CHECK(r.lse[1] == Approx(std::log(46.0)));
  }
}

TEST_CASE("exercise 12.1: causal masking, and a row that sees no key at all", "[ch12]") {
  // Queries at positions 0 and 1, keys at 1, 2, 3 (k0 = 1). Causal: query 0 sees no key (out 0,
  // lse -inf, never NaN); query 1 sees only the key at its own position (score 2·0 = 0): out = 1,
  // lse = 0. The tile of keys 3.. is after every query and may be skipped.
  const std::vector<float> q{1, 2}, k{0, std::log(3.0f), std::log(6.0f)}, v{1, 2, 4};
  for (int cols : {1, 2, 3}) {
    INFO("exercise 12.1: tiles of " << cols << " keys, causal, q0 = 0, k0 = 1");
    const TileRun r = run_query_tile(q, k, v, cols, true, 0, 1);
    CHECK(r.out[0] == 0.0f);
    CHECK(r.lse[0] == -kInf);
    CHECK(r.out[1] == Approx(1.0));
    CHECK(r.lse[1] == Approx(0.0).margin(1e-7));
  }
  // Queries at 1 and 2 over keys at 0, 1, 2: row 0 sees keys 0 and 1 (weights 1 : 3), row 1 all three.
  for (int cols : {1, 2, 3}) {
    INFO("exercise 12.1: tiles of " << cols << " keys, causal, q0 = 1, k0 = 0");
    const TileRun r = run_query_tile(q, k, v, cols, true, 1, 0);
    CHECK(r.out[0] == Approx((1.0 + 6.0) / 4));
    CHECK(r.lse[0] == Approx(std::log(4.0)));
    CHECK(r.out[1] == Approx(163.0 / 46));
    CHECK(r.lse[1] == Approx(std::log(46.0)));
  }
}

TEST_CASE("exercise 12.2: one key tile's gradients equal the direct formulas", "[ch12]") {
  // 3 queries and a tile of 4 keys at positions 4..7, d = 2; q, out, dout and dq are read at a
  // stride of 3 floats (the third one NaN, or 99 in dq: it must stay 99). lse given (any values:
  // the formulas are linear in what they are given); D_i comes from out and dout.
  const int queries = 3, cols = 4, d = 2, ld = 3;
  const float X = NAN;
  const float q[] = {0.3f, -0.2f, X, 0.5f, 0.1f, X, -0.4f, 0.7f, X};
  const float out[] = {0.9f, -0.1f, X, 0.2f, 0.6f, X, -0.3f, 0.4f, X};
  const float dout[] = {0.2f, -0.3f, X, 0.4f, 0.1f, X, -0.6f, 0.5f, X};
  const float k[] = {0.2f, 0.4f, -0.1f, 0.3f, 0.6f, -0.5f, 0.0f, 0.2f};
  const float v[] = {1.0f, 0.5f, -0.5f, 0.2f, 0.3f, 0.9f, -0.7f, 0.1f};
  const float lse[] = {1.1f, 0.9f, 1.3f};
  const float scale = 0.7f;
  // q0 = 5: every query sees key 4 (causal: query i sees keys up to its position); q0 = 2: the
  // first two see none of the tile; q0 = 1 with the tile at 8..11: no query sees any key.
  for (const auto& [q0, k0] : std::vector<std::pair<std::int64_t, std::int64_t>>{{5, 4}, {2, 4}, {1, 8}})
    for (const bool causal : {true, false})
      for (const int rows : {1, 2, 3, 8}) {
        INFO("exercise 12.2: queries at " << q0 << ".." << q0 + queries - 1 << ", keys at " << k0 << ".." << k0 + cols - 1
                                          << ", query tiles of " << rows << (causal ? ", causal" : ", not causal"));
        std::vector<float> dq(queries * ld, 99.0f);
        for (int i = 0; i < queries; ++i) dq[i * ld] = 0.5f, dq[i * ld + 1] = -0.5f;  // dq is added to
        std::vector<double> wq(dq.begin(), dq.end()), wk(cols * d, 0.0), wv(cols * d, 0.0);
        for (int i = 0; i < queries; ++i) {
          double delta = 0;
          for (int e = 0; e < d; ++e) delta += dout[i * ld + e] * out[i * ld + e];
          for (int j = 0; j < cols; ++j) {
            if (causal && k0 + j > q0 + i) continue;
            double s = 0, dp = 0;
            for (int e = 0; e < d; ++e) s += q[i * ld + e] * k[j * d + e], dp += dout[i * ld + e] * v[j * d + e];
            const double p = std::exp(s * scale - lse[i]), ds = p * (dp - delta);
            for (int e = 0; e < d; ++e) {
              wv[j * d + e] += p * dout[i * ld + e];
              wq[i * ld + e] += scale * ds * k[j * d + e];
              wk[j * d + e] += scale * ds * q[i * ld + e];
            }
          }
        }
        std::vector<float> dk(cols * d, NAN), dv(cols * d, NAN);  // overwritten
        std::vector<float> p_scratch(rows * cols, NAN), dp_scratch(rows * cols, NAN), delta_scratch(rows, NAN);
        key_tile_backward({k, v, q, out, dout, lse, p_scratch.data(), dp_scratch.data(), delta_scratch.data(), cols,
                           queries, rows, d, ld, scale, causal, q0, k0},
                          {dq.data(), dk.data(), dv.data()});
        for (std::size_t e = 0; e < dq.size(); ++e) {
          INFO("dq[" << e / ld << "][" << e % ld << "]");
          CHECK(dq[e] == Approx(wq[e]).margin(1e-6));
        }
        for (std::size_t e = 0; e < dk.size(); ++e) {
          INFO("dk[" << e / d << "][" << e % d << "]");
          CHECK(dk[e] == Approx(wk[e]).margin(1e-6));
        }
        for (std::size_t e = 0; e < dv.size(); ++e) {
          INFO("dv[" << e / d << "][" << e % d << "]");
          CHECK(dv[e] == Approx(wv[e]).margin(1e-6));
        }
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
  // Flash: the same tiles at every T — forward the q tile, m, l and acc (16 rows) and 16 × 16
  // scores; backward the k, v, dk and dv tiles (16 keys), delta (16 rows) and 16 × 16 p and dp:
  // exactly equal at T = 64 and 512.
  CHECK(extra(64, true) == extra(512, true));
  CHECK(extra(64, true) < 64 * 1024);
  // Naive: P alone is 2·T² floats; 8× the T is at least 64× the bytes beyond it.
  const std::int64_t n64 = extra(64, false), n512 = extra(512, false);
  CHECK(n64 >= 2 * 64 * 64 * 4);
  CHECK(n512 >= 2 * 512 * 512 * 4);
  CHECK(n512 >= 60 * n64);
}

TEST_CASE("the model trained with flash attention gives the naive attention's losses", "[ch12]") {
  const TrainingConfig cfg = flash_training();
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
  TrainingConfig cfg = flash_training();
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
