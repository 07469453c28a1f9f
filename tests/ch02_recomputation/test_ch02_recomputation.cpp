// Chapter 02: exercise 02.1's probabilities against the attention op's; then none / selective /
// full on the same batch, the model making its probabilities with exercise 02.1. The activations
// held between forward and backward are exactly L × (the layer formula of the mode) + the head's;
// the gradients are bit-identical; the extra FLOPs are the recomputed work. [gpu]: the same on a
// GPU (the model's CUDA attention making the probabilities), and its gradients against the CPU's.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "common/calc/memory_model.hpp"
#include "common/data/dataset.hpp"
#include "common/device.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "chapters/02_recomputation/attention_probs.hpp"
#include "chapters/02_recomputation/recompute_measurement.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/filled_tensor.hpp"
#include "tests/support/small_training.hpp"

using namespace usp;
using namespace usp::ch02;
using namespace usp::testing;

namespace {

// Values in [-1, 1) from a seed, as a tensor of `shape` in dtype dt.
Tensor uniform(const Shape& shape, DType dt, std::uint64_t seed) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = 2.0f * rng::uniform(seed, "ch02-qk", static_cast<std::uint64_t>(i)) - 1.0f;
  return Tensor::from_floats(v, shape, dt);
}

// usp-tiny: L = 2, h = 64, a = 4, g = 2, f = 192.
TrainingConfig tiny(DType dt) {
  TrainingConfig cfg = small_training(ModelConfig::builtin("usp-tiny"), /*seq=*/48, /*mbs=*/2);
  cfg.dtype = dt;
  return cfg;
}

}  // namespace

TEST_CASE("exercise 02.1: the attention probabilities equal the attention op's", "[ch02]") {
  // B = 2, T = 70 (more than one 64-row block of the op), H = 4 query heads on G = 2 kv heads.
  const std::int64_t B = 2, T = 70, H = 4, G = 2, D = 16;
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    const Tensor q = uniform({B, T, H, D}, dt, 1), k = uniform({B, T, G, D}, dt, 2), v = uniform({B, T, G, D}, dt, 3);
    Tensor want = Tensor::empty({B, H, T, T}), out = Tensor::empty({B, T, H, D}, dt);
    ops::attention_forward(q, k, v, out, want);
    Tensor got = Tensor::empty({B, H, T, T});
    got.fill(7.0f);  // every entry must be written, the masked ones with 0
    attention_probs(q, k, got);
    REQUIRE(tensor_problem(got, "exercise 02.1: probs", {B, H, T, T}, DType::f32) == "");
    // Both compute in fp32 from the same inputs but in different orders: the scores |q·k|/√D <= 4
    // differ by the dot products' rounding, at most D·2⁻²⁴·Σ|q_d k_d|/√D ≈ 4e-6, which moves a
    // probability by that much relatively; the row sums over <= 70 keys add <= 70·2⁻²⁴ ≈ 4e-6
    // and the op's exp 2 ulp. 2e-5 relative covers both with room for a double-precision answer.
    const std::vector<float> g = got.to_floats(), w = want.to_floats();
    CHECK(elementwise_mismatch(g, w, Tolerance{1e-7, 2e-5}) == "");
    // Above the diagonal (key after query) the probability is exactly 0.
    std::vector<float> masked;
    for (std::int64_t row = 0; row < B * H * T; ++row)
      for (std::int64_t s = row % T + 1; s < T; ++s) masked.push_back(g[static_cast<std::size_t>(row * T + s)]);
    CHECK(elementwise_mismatch(masked, std::vector<float>(masked.size(), 0.0f)) == "");
    // Deterministic: the rebuild in backward must give the forward's bits again.
    Tensor again = Tensor::empty({B, H, T, T});
    attention_probs(q, k, again);
    REQUIRE(tensor_problem(again, "exercise 02.1: probs (the rebuild)", {B, H, T, T}, DType::f32) == "");
    CHECK(elementwise_mismatch(again.to_floats(), g) == "");
  }
}

TEST_CASE("exercise 02.1: query head j reads kv head j / (H/G), for H/G = 2 of G = 3 and for H = G", "[ch02]") {
  // The first test's H = 4 on G = 2 cannot tell j / (H/G) from j / G (H = G² there); here the
  // group's size H/G and the number of groups G differ. Against the attention op, as above.
  const std::int64_t B = 2, T = 9, D = 8;
  for (const auto& [H, G] : std::vector<std::pair<std::int64_t, std::int64_t>>{{6, 3}, {2, 2}}) {
    INFO("H = " << H << " query heads on G = " << G << " kv heads; index ((b·H + j)·T + t)·T + s");
    const Tensor q = uniform({B, T, H, D}, DType::f32, 4), k = uniform({B, T, G, D}, DType::f32, 5),
                 v = uniform({B, T, G, D}, DType::f32, 6);
    Tensor want = Tensor::empty({B, H, T, T}), out = Tensor::empty({B, T, H, D});
    ops::attention_forward(q, k, v, out, want);
    Tensor got = Tensor::empty({B, H, T, T});
    attention_probs(q, k, got);
    REQUIRE(tensor_problem(got, "exercise 02.1: probs", {B, H, T, T}, DType::f32) == "");
    // The first test's tolerance: the scores differ by the dot products' rounding only.
    CHECK(elementwise_mismatch(got.to_floats(), want.to_floats(), Tolerance{1e-7, 2e-5}) == "");
  }
}

TEST_CASE("exercise 02.1: scores of magnitude 1000 give finite probabilities, worked by hand", "[ch02]") {
  // exp(1000) overflows even in double (its largest is about e^709): a softmax that does not
  // subtract the row's maximum first gives inf/inf = NaN (or 0/0 for scores of -1000). Worked by
  // hand with B = 1, T = 3, D = 4 (scale 1/2), H = 2 query heads on G = 1 kv head:
  //   keys k0 = k1 = (1, 0, 0, 0), k2 = (1, 1, 0, 0);
  //   head 0: queries (2000, 0, 0, 0) at t = 0, 1 and (2000, 80, 0, 0) at t = 2: scores 1000 for
  //     every key, except q2·k2/2 = 1040; head 1: the queries negated, scores -1000 and -1040.
  // Equal scores share the row evenly: rows 1 and 1/2. Row 2 of head 0: keys 0 and 1 get
  // e^-40 / (1 + 2e^-40) each and key 2 the rest; of head 1: key 2 gets e^-40 / (2 + e^-40).
  const std::int64_t T = 3, H = 2, D = 4;
  std::vector<float> qv(static_cast<std::size_t>(T * H * D), 0.0f), kv(static_cast<std::size_t>(T * D), 0.0f);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t j = 0; j < H; ++j) {
      const float sign = j == 0 ? 1.0f : -1.0f;
      qv[static_cast<std::size_t>((t * H + j) * D)] = sign * 2000.0f;
      if (t == 2) qv[static_cast<std::size_t>((t * H + j) * D + 1)] = sign * 80.0f;
    }
  for (std::int64_t s = 0; s < T; ++s) kv[static_cast<std::size_t>(s * D)] = 1.0f;
  kv[static_cast<std::size_t>(2 * D + 1)] = 1.0f;
  const Tensor q = Tensor::from_floats(qv, {1, T, H, D}), k = Tensor::from_floats(kv, {1, T, 1, D});
  Tensor got = Tensor::empty({1, H, T, T});
  got.fill(7.0f);
  attention_probs(q, k, got);
  REQUIRE(tensor_problem(got, "exercise 02.1: probs", {1, H, T, T}, DType::f32) == "");
  const double e = std::exp(-40.0);
  const std::vector<float> want = {
      // head 0: rows t = 0, 1, 2
      1.0f, 0.0f, 0.0f,  //
      0.5f, 0.5f, 0.0f,  //
      static_cast<float>(e / (1 + 2 * e)), static_cast<float>(e / (1 + 2 * e)), static_cast<float>(1 / (1 + 2 * e)),
      // head 1
      1.0f, 0.0f, 0.0f,  //
      0.5f, 0.5f, 0.0f,  //
      static_cast<float>(1 / (2 + e)), static_cast<float>(1 / (2 + e)), static_cast<float>(e / (2 + e))};
  // 1e-6 relative: a float answer's rounding.
  INFO("index h·9 + t·3 + s is head h, query t, key s");
  CHECK(elementwise_mismatch(got.to_floats(), want, Tolerance::relative(1e-6)) == "");
}

TEST_CASE("recomputation: memory by the formula, identical gradients, counted FLOPs", "[ch02]") {
  for (DType dt : {DType::f32, DType::bf16}) {
    const TrainingConfig cfg = tiny(dt);
    INFO(dtype_name(dt));
    const auto data = make_dataset("synthetic", cfg.seed);
    const Batch batch = data->batch(0, 0, cfg.mbs, cfg.seq);
    const ModeResult none = measure_mode(cfg, Recompute::none, batch);
    const ModeResult sel = measure_mode(cfg, Recompute::selective, batch);
    const ModeResult full = measure_mode(cfg, Recompute::full, batch);

    // What is held after forward = L × the layer's count + the head (final norm in and out,
    // its fp32 rstd, the logits) — the head is the same in every mode.
    const std::int64_t L = cfg.model.layers, N = cfg.mbs * cfg.seq, es = static_cast<std::int64_t>(dtype_size(dt));
    const std::int64_t head = N * (2 * cfg.model.hidden * es + 4 + cfg.model.vocab * es);
    for (const ModeResult* r : {&none, &sel, &full}) {
      INFO(recompute_name(r->mode));
      CHECK(r->layer_kept == r->layer_formula);
      CHECK(r->held_after_forward == L * r->layer_formula + head);
    }
    // The formulas' differences: selective drops the b·a·s² probabilities of each layer; full
    // keeps only the layer input (s·b·h).
    CHECK(none.layer_kept - sel.layer_kept == cfg.mbs * cfg.model.heads * cfg.seq * cfg.seq * es);
    CHECK(full.layer_kept == N * cfg.model.hidden * es);
    CHECK(none.peak_activation > sel.peak_activation);
    CHECK(sel.peak_activation > full.peak_activation);

    // Gradients: the same arithmetic, only at different times.
    CHECK(count_differences(sel.gradients, none.gradients) == 0);
    CHECK(count_differences(full.gradients, none.gradients) == 0);

    // FLOPs: same model FLOPs (MFU's numerator); the hardware does more.
    CHECK(sel.flops.model() == none.flops.model());
    CHECK(full.flops.model() == none.flops.model());
    CHECK(none.flops.recompute == 0);
    CHECK(sel.flops.recompute == L * 2 * cfg.mbs * cfg.model.heads * cfg.seq * cfg.seq * cfg.model.head_dim());
    CHECK(full.flops.recompute > sel.flops.recompute);
    // full recomputes every layer's forward: the forward minus the LM head's matmul.
    CHECK(full.flops.recompute == none.flops.forward - 2 * N * cfg.model.vocab * cfg.model.hidden);
  }
}

TEST_CASE("recomputation on a GPU: the formula's bytes, identical gradients, the CPU's gradients", "[ch02][gpu]") {
  if (cuda_device_count() == 0) {
    WARN("no CUDA device: skipped");
    return;
  }
  TrainingConfig cfg = tiny(DType::f32);
  const auto data = make_dataset("synthetic", cfg.seed);
  const Batch batch = data->batch(0, 0, cfg.mbs, cfg.seq);
  const ModeResult cpu = measure_mode(cfg, Recompute::none, batch);
  cfg.device = Device::cuda(0);
  const ModeResult none = measure_mode(cfg, Recompute::none, batch);
  const ModeResult sel = measure_mode(cfg, Recompute::selective, batch);
  const ModeResult full = measure_mode(cfg, Recompute::full, batch);
  for (const ModeResult* r : {&none, &sel, &full}) {
    INFO(recompute_name(r->mode));
    CHECK(r->layer_kept == r->layer_formula);  // the tracker counts device memory by category too
  }
  // Deterministic kernels and cuBLAS on one stream: recomputing gives the same bits on a GPU too.
  CHECK(count_differences(sel.gradients, none.gradients) == 0);
  CHECK(count_differences(full.gradients, none.gradients) == 0);
  // Against the CPU: fp32 in other summation orders, one backward: 1e-4 of the largest gradient
  // (tests/model/test_model_cuda.cpp's bound for the weights after three steps is the same size).
  REQUIRE(none.gradients.size() == cpu.gradients.size());
  float gmax = 0, worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < cpu.gradients.size(); ++i) {
    gmax = std::max(gmax, std::fabs(cpu.gradients[i]));
    if (!(std::fabs(none.gradients[i] - cpu.gradients[i]) <= worst)) worst = std::fabs(none.gradients[i] - cpu.gradients[i]), at = i;
  }
  INFO("largest |Δg| " << worst << " at element " << at << " (CPU " << cpu.gradients[at] << ", GPU "
                       << none.gradients[at] << "), max|g| " << gmax);
  CHECK(worst <= 1e-4f * gmax);
  CHECK(std::fabs(none.loss - cpu.loss) <= 1e-5 * cpu.loss);
}
