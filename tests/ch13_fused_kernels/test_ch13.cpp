// Chapter 13: fused kernels on the CPU. Exercise 13.1 (residual + RMSNorm in one pass, forward and
// backward) against the core's add and rmsnorm ops on a width no vector divides, in place too;
// every chain's fused and core variants against its unfused one; every pass's declared reads and
// writes against what it really touches, and each variant's counted bytes against the lesson's
// formulas; the fused variants allocate nothing; the model trained with the fused norm gives the
// core's losses.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/bandwidth_bench.hpp"
#include "chapters/13_fused_kernels/chains.hpp"
#include "chapters/13_fused_kernels/fused_model_norm.hpp"
#include "chapters/13_fused_kernels/fused_report.hpp"
#include "chapters/13_fused_kernels/fused_residual_norm.hpp"
#include "common/data/dataset.hpp"
#include "common/error.hpp"
#include "common/memory_tracker.hpp"
#include "common/model/model.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"

using namespace usp;
using namespace usp::ch13;

namespace {

std::vector<float> random_values(std::int64_t n, const char* name, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = offset + scale * rng::normal(5, name, i);
  return v;
}

Tensor tensor_of(const std::vector<float>& v, const Shape& shape) { return Tensor::from_floats(v, shape); }

// |got - want| <= tol · (1 + |want|) for every element; the first failure names the element.
void require_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = tol * (1.0 + std::fabs(want[i]));
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= bound)) {
      FAIL(what << ": element " << i << " is " << got[i] << ", expected " << want[i] << " (tolerance " << bound << ")");
    }
  }
}

constexpr std::int64_t kRows = 7, kC = 37;  // 37: no multiple of the 8 lanes or any vector width
constexpr float kEps = 1e-5f;

}  // namespace

// Tolerances: the kernels evaluate the same formulas in fp32; only the order of a row's sum of
// C = 37 terms may differ from the core's, which moves the sum by at most C·ε ≈ 4.4e-6 of the sum
// of magnitudes. 1e-5 relative covers that with room; a wrong formula is off by O(1).

TEST_CASE("exercise 13.1: the fused forward equals the core's add + RMSNorm", "[ch13]") {
  // Small values (mean square ~2e-4) so that eps = 1e-5 moves rstd by a few percent: leaving it
  // out, or adding it in the wrong place, fails.
  const auto x = random_values(kRows * kC, "x", 0.01f), r = random_values(kRows * kC, "r", 0.01f);
  const auto w = random_values(kC, "w", 0.2f, 1.0f);
  // The core's two ops.
  Tensor x2_ref = tensor_of(r, {kRows, kC}), h_ref = Tensor::empty({kRows, kC}), rstd_ref = Tensor::empty({kRows});
  ops::add_inplace(x2_ref, tensor_of(x, {kRows, kC}));
  ops::rmsnorm_forward(x2_ref, tensor_of(w, {kC}), h_ref, rstd_ref, kEps);

  std::vector<float> x2(x.size()), h(x.size()), rstd(kRows);
  residual_rmsnorm_forward(x.data(), r.data(), w.data(), kEps, kRows, kC, x2.data(), h.data(), rstd.data());
  require_close(x2, x2_ref.to_floats(), 0.0, "x2 = x + r (one rounding, exact)");
  require_close(rstd, rstd_ref.to_floats(), 1e-5, "rstd");
  require_close(h, h_ref.to_floats(), 1e-5, "h");

  SECTION("in place: x2 is the branch output's own buffer, as the model calls it") {
    std::vector<float> buf = r, h2(x.size()), rstd2(kRows);
    residual_rmsnorm_forward(x.data(), buf.data(), w.data(), kEps, kRows, kC, buf.data(), h2.data(), rstd2.data());
    require_close(buf, x2_ref.to_floats(), 0.0, "x2 written over r");
    require_close(h2, h_ref.to_floats(), 1e-5, "h (in place)");
  }
}

TEST_CASE("exercise 13.1: the fused backward equals the core's RMSNorm backward, accumulating", "[ch13]") {
  const auto dh = random_values(kRows * kC, "dh"), x2 = random_values(kRows * kC, "x2");
  const auto w = random_values(kC, "w", 0.2f, 1.0f), rstd = random_values(kRows, "rstd", 0.1f, 1.0f);
  const auto dx0 = random_values(kRows * kC, "stream"), dw0 = random_values(kC, "dw0");  // gradients already there
  Tensor dx_ref = tensor_of(dx0, {kRows, kC}), dw_ref = tensor_of(dw0, {kC});
  ops::rmsnorm_backward(tensor_of(dh, {kRows, kC}), tensor_of(x2, {kRows, kC}), tensor_of(w, {kC}),
                        tensor_of(rstd, {kRows}), dx_ref, dw_ref);
  std::vector<float> dx = dx0, dw = dw0;
  residual_rmsnorm_backward(dh.data(), x2.data(), w.data(), rstd.data(), kRows, kC, dx.data(), dw.data());
  require_close(dx, dx_ref.to_floats(), 1e-5, "dx (the stream's gradient plus the norm's)");
  require_close(dw, dw_ref.to_floats(), 1e-5, "dw (accumulated over the rows)");
}

TEST_CASE("every chain: the fused and core variants equal the unfused one", "[ch13]") {
  // Odd sizes: 37 rows, widths 45 and 53, a vocabulary of 101, 1001 parameters.
  const ChainSizes odd{37, 45, 53, 101, 1001};
  for (const std::string& id : chain_ids()) {
    const Chain chain = make_chain(id, odd);
    const auto reference = run_outputs(chain, chain.variant("unfused"));
    for (const Variant& v : chain.variants) {
      if (v.name == "unfused") continue;
      const auto got = run_outputs(chain, v);
      REQUIRE(got.size() == reference.size());
      for (std::size_t o = 0; o < got.size(); ++o)
        require_close(got[o], reference[o], 1e-5, chain.name + ", " + v.name + ", output " + std::to_string(o));
    }
  }
}

TEST_CASE("every pass touches exactly the tensors it declares (the byte counts are the code's)", "[ch13]") {
  const ChainSizes odd{9, 13, 11, 17, 29};
  for (const std::string& id : chain_ids()) {
    const Chain chain = make_chain(id, odd);
    for (const Variant& v : chain.variants)
      for (std::size_t p = 0; p < v.passes.size(); ++p) {
        INFO(chain.name << ", " << v.name << ", pass " << p << " (" << v.passes[p].kernel << ")");
        CHECK(touched_outside_declared(chain, v, p).empty());
      }
  }
}

TEST_CASE("the touch check catches an undeclared read and an undeclared write", "[ch13]") {
  const Tensor a = Tensor::from_floats({1, 2, 3}, {3}), b = Tensor::from_floats({4, 5, 6}, {3});
  const Tensor y = Tensor::zeros({3}), z = Tensor::zeros({3});
  Chain chain;
  chain.name = "probe";
  chain.inputs = {a, b};
  chain.outputs = {y, z};
  chain.reset = [] {};
  auto f = [](const Tensor& t) { return t.data<float>(); };
  Variant reads_b{"reads b undeclared", {}, {{"add", {a}, {y}, [=] { for (int i = 0; i < 3; ++i) f(y)[i] = f(a)[i] + f(b)[i]; }}}};
  Variant writes_z{"writes z undeclared", {}, {{"copy", {a}, {y}, [=] { for (int i = 0; i < 3; ++i) f(y)[i] = f(z)[i] = f(a)[i]; }}}};
  Variant skips{"leaves y[2]", {}, {{"copy", {a}, {y}, [=] { for (int i = 0; i < 2; ++i) f(y)[i] = f(a)[i]; }}}};
  Variant right{"declared", {}, {{"add", {a, b}, {y}, [=] { for (int i = 0; i < 3; ++i) f(y)[i] = f(a)[i] + f(b)[i]; }}}};
  CHECK_FALSE(touched_outside_declared(chain, reads_b, 0).empty());
  CHECK_FALSE(touched_outside_declared(chain, writes_z, 0).empty());
  CHECK_FALSE(touched_outside_declared(chain, skips, 0).empty());
  CHECK(touched_outside_declared(chain, right, 0).empty());
}

TEST_CASE("the counted bytes are the lesson's formulas", "[ch13]") {
  const std::int64_t N = 37, C = 45, F = 53, V = 101, P = 1001;
  const ChainSizes z{N, C, F, V, P};
  auto bytes = [&](const std::string& id, const std::string& variant) {
    return make_chain(id, z).variant(variant).bytes();
  };
  // 4 bytes per element (fp32 values, i32 targets).
  CHECK(bytes("norm_fwd", "unfused") == 4 * (10 * N * C + 4 * N + C));
  CHECK(bytes("norm_fwd", "core ops") == 4 * (5 * N * C + N + C));
  CHECK(bytes("norm_fwd", "fused") == 4 * (4 * N * C + N + C));
  CHECK(bytes("norm_bwd", "unfused") == 4 * (14 * N * C + 4 * N + 3 * C));
  CHECK(bytes("norm_bwd", "fused") == 4 * (4 * N * C + N + 3 * C));
  CHECK(bytes("swiglu_fwd", "unfused") == 4 * 8 * N * F);
  CHECK(bytes("swiglu_fwd", "fused") == 4 * 3 * N * F);
  CHECK(bytes("swiglu_bwd", "unfused") == 4 * 17 * N * F);
  CHECK(bytes("swiglu_bwd", "fused") == 4 * 5 * N * F);
  CHECK(bytes("softmax_ce", "unfused") == 4 * (8 * N * V + 8 * N));
  CHECK(bytes("softmax_ce", "fused") == 4 * (2 * N * V + 2 * N));
  CHECK(bytes("adamw", "unfused") == 4 * 22 * P);
  CHECK(bytes("adamw", "fused") == 4 * 7 * P);
}

TEST_CASE("fused variants keep no intermediates and allocate nothing; unfused cross-entropy keeps two [N, V]", "[ch13]") {
  MemoryTracker& tracker = MemoryTracker::instance();
  const ChainSizes z{33, 40, 48, 500, 700};
  for (const std::string& id : chain_ids()) {
    const Chain chain = make_chain(id, z);
    const Variant& fused = chain.variant("fused");
    CHECK(fused.scratch_bytes() == 0);
    chain.reset();
    const std::int64_t before = tracker.current().total();
    tracker.reset_peak();
    fused.run();
    INFO(chain.name);
    CHECK(tracker.peak().total() == before);  // not one byte allocated while it ran
  }
  const Chain ce = make_chain("softmax_ce", z);
  CHECK(ce.variant("unfused").scratch_bytes() == 4 * (2 * 33 * 500 + 2 * 33));  // e and p, and two [N] vectors
}

TEST_CASE("the bandwidth bench times every variant and writes one CSV row each", "[ch13]") {
  const ChainSizes z{16, 64, 80, 200, 4000};
  const auto rows = bench_chains(chain_ids(), z, 1);
  CHECK(rows.size() == 14);
  for (const VariantTiming& t : rows) {
    CHECK(t.ms > 0);
    CHECK(t.bytes == make_chain(t.chain_id, z).variant(t.variant).bytes());
  }
  const std::string csv = bandwidth_table(rows, 10.0).csv();
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 15);
}

TEST_CASE("the model trained with the fused residual + RMSNorm gives the core's losses", "[ch13]") {
  TrainingConfig cfg = testing::small_training(
      testing::small_model(
          {.name = "fused-test", .vocab = 256, .hidden = 44, .layers = 2, .heads = 2, .kv_heads = 1, .ffn = 40}),
      /*seq=*/23, /*mbs=*/2, /*steps=*/3);
  const auto data = make_dataset("synthetic", cfg.seed);
  const std::vector<double> core = train_losses(cfg, *data, false), fused = train_losses(cfg, *data, true);
  REQUIRE(core.size() == 3);
  for (std::size_t s = 0; s < core.size(); ++s) {
    INFO("step " << s);
    // 1e-5 relative: three AdamW steps from parameters that differ by the norm's rounding.
    CHECK(std::fabs(fused[s] - core[s]) <= 1e-5 * core[s]);
  }
  CHECK(core.back() < core.front());  // it trained

  SECTION("bf16 activations are refused with the flag to change") {
    cfg.dtype = DType::bf16;
    CHECK_THROWS_WITH(train_losses(cfg, *data, true), Catch::Contains("--precision fp32"));
  }
}

TEST_CASE("the model calls its ResidualNorm once per layer in forward and in backward", "[ch13]") {
  // Counts the calls around the fused kernel, so a model that ignored ModelOptions::residual_norm
  // (and trained with the core's ops, giving the same losses) fails here.
  struct Counting final : ResidualNorm {
    FusedResidualNorm inner;
    int forwards = 0, backwards = 0;
    void forward(Tensor& x2, const Tensor& x, const Tensor& w, Tensor& h2, Tensor& rstd, float eps) override {
      ++forwards;
      inner.forward(x2, x, w, h2, rstd, eps);
    }
    void backward(const Tensor& dh2, const Tensor& x2, const Tensor& w, const Tensor& rstd, Tensor& dx_acc,
                  Tensor& dw) override {
      ++backwards;
      inner.backward(dh2, x2, w, rstd, dx_acc, dw);
    }
  } counting;
  const ModelConfig c = testing::small_model(
      {.name = "count", .vocab = 256, .hidden = 44, .layers = 3, .heads = 2, .kv_heads = 1, .ffn = 40});
  ParamStore params(c, DType::f32);
  params.init(3);
  ModelOptions options;
  options.residual_norm = &counting;
  Model model(params, options);
  const auto data = make_dataset("synthetic", 3);
  const Batch b = data->batch(0, 0, 2, 16);
  model.forward(b.inputs, b.targets);
  CHECK(counting.forwards == 3);
  CHECK(counting.backwards == 0);
  model.backward();
  CHECK(counting.backwards == 3);
}
