// The whole model's gradients against central finite differences of its own loss, for every
// parameter element, untied and tied; and the three recomputation modes giving the same
// gradients bit for bit (they run the same arithmetic, only at different times).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/model/model.hpp"
#include "tests/model/model_fixtures.hpp"

using namespace usp;
using usp::testing::gradcheck_config;
using usp::testing::random_tokens;

namespace {

std::vector<float> gradients_of(const ModelConfig& cfg, Recompute mode, const Tensor& in, const Tensor& tgt,
                                double* loss = nullptr) {
  ParamStore params(cfg);
  params.init(7);
  Model model(params, {mode, DType::f32});
  const double l = model.forward(in, tgt);
  if (loss) *loss = l;
  model.backward();
  return params.flat_grad().to_floats();
}

void check_against_finite_differences(bool tied) {
  const ModelConfig cfg = gradcheck_config(tied);
  const Tensor in = random_tokens(2, 5, cfg.vocab, 1, "inputs");
  const Tensor tgt = random_tokens(2, 5, cfg.vocab, 1, "targets");
  ParamStore params(cfg);
  params.init(7);
  Model model(params);
  model.forward(in, tgt);
  model.backward();
  const std::vector<float> grad = params.flat_grad().to_floats();

  // Oracle: the fourth-order central difference (8(L(w+h) - L(w-h)) - (L(w+2h) - L(w-2h))) / 12h,
  // whose truncation error is h⁴/30·|L⁽⁵⁾| (≈ 3e-10·|L⁽⁵⁾| at h = 1e-2: negligible even where
  // RMSNorm curves sharply). The loss (≈ ln 19 ≈ 2.9) is computed in fp32 through a few hundred
  // roundings, so one evaluation is good to ~1e-6; the stencil's weights (18/12h in all) turn that
  // into ≲ 1.5e-4 of noise. A wrong gradient is off by O(|g|); the PyTorch float64 reference
  // test checks the same gradients to 1e-5 relative.
  const float h = 1e-2f;
  for (const ParamInfo& p : params.infos()) {
    Tensor w = params.param(p.name);
    float* data = w.data<float>();
    float max_abs = 0;
    for (std::int64_t j = 0; j < p.numel; ++j) {
      const float saved = data[j];
      auto loss_at = [&](float delta) {
        data[j] = saved + delta;
        const double l = model.evaluate(in, tgt);
        data[j] = saved;
        return l;
      };
      const double fd = (8.0 * (loss_at(h) - loss_at(-h)) - (loss_at(2 * h) - loss_at(-2 * h))) / (12.0 * h);
      const double g = grad[static_cast<std::size_t>(p.offset + j)];
      max_abs = std::max(max_abs, static_cast<float>(std::fabs(g)));
      INFO(p.name << "[" << j << "]: backward " << g << ", finite difference " << fd);
      REQUIRE(std::fabs(fd - g) <= 1.5e-4 + 2e-3 * std::fabs(g));
    }
    INFO(p.name << ": the largest gradient element is " << max_abs);
    CHECK(max_abs > 1e-3f);  // every parameter really receives gradient
  }
}

}  // namespace

TEST_CASE("model gradients match finite differences (untied head)", "[model]") {
  check_against_finite_differences(false);
}

TEST_CASE("model gradients match finite differences (tied embeddings)", "[model]") {
  check_against_finite_differences(true);
}

TEST_CASE("none, selective and full recomputation give identical gradients", "[model][recompute]") {
  const ModelConfig cfg = gradcheck_config();
  const Tensor in = random_tokens(3, 7, cfg.vocab, 2, "inputs");
  const Tensor tgt = random_tokens(3, 7, cfg.vocab, 2, "targets");
  double l_none = 0, l_sel = 0, l_full = 0;
  const auto g_none = gradients_of(cfg, Recompute::none, in, tgt, &l_none);
  const auto g_sel = gradients_of(cfg, Recompute::selective, in, tgt, &l_sel);
  const auto g_full = gradients_of(cfg, Recompute::full, in, tgt, &l_full);
  CHECK(l_none == l_sel);
  CHECK(l_none == l_full);
  REQUIRE(g_none.size() == g_sel.size());
  std::size_t differ_sel = 0, differ_full = 0;
  for (std::size_t i = 0; i < g_none.size(); ++i) {
    differ_sel += g_none[i] != g_sel[i];
    differ_full += g_none[i] != g_full[i];
  }
  CHECK(differ_sel == 0);
  CHECK(differ_full == 0);
}

TEST_CASE("gradients accumulate across backward calls, scaled by loss_scale", "[model]") {
  const ModelConfig cfg = gradcheck_config();
  const Tensor in = random_tokens(2, 6, cfg.vocab, 3, "inputs");
  const Tensor tgt = random_tokens(2, 6, cfg.vocab, 3, "targets");
  const auto once = gradients_of(cfg, Recompute::none, in, tgt);
  ParamStore params(cfg);
  params.init(7);
  Model model(params);
  model.forward(in, tgt);
  model.backward(0.5f);
  model.forward(in, tgt);
  model.backward(0.5f);
  const auto twice_half = params.flat_grad().to_floats();
  // Every backward op is linear in the incoming gradient, so scaling by 0.5 halves each
  // contribution exactly; the two halves then add back to g up to the order in which the BLAS
  // kernel folds its partial sums into the existing gradient: a few fp32 ulps of the largest
  // terms, hence 1e-6 of the tensor's largest element.
  float max_abs = 0;
  for (float g : once) max_abs = std::max(max_abs, std::fabs(g));
  for (std::size_t i = 0; i < once.size(); ++i) REQUIRE(std::fabs(twice_half[i] - once[i]) <= 1e-6f * max_abs);
}

TEST_CASE("evaluate gives the training forward's loss and keeps nothing", "[model]") {
  const ModelConfig cfg = gradcheck_config();
  const Tensor in = random_tokens(2, 6, cfg.vocab, 4, "inputs");
  const Tensor tgt = random_tokens(2, 6, cfg.vocab, 4, "targets");
  ParamStore params(cfg);
  params.init(7);
  Model model(params);
  auto& tracker = MemoryTracker::instance();
  const auto act0 = tracker.current()[MemCategory::Activation];
  const double eval = model.evaluate(in, tgt);
  CHECK(tracker.current()[MemCategory::Activation] == act0);
  const double train = model.forward(in, tgt);
  CHECK(eval == train);
  model.backward();
  CHECK(tracker.current()[MemCategory::Activation] == act0);
}

TEST_CASE("bad batches are refused with a clear message", "[model]") {
  ModelConfig cfg = gradcheck_config();
  cfg.max_seq = 4;
  ParamStore params(cfg);
  params.init(1);
  Model model(params);
  const Tensor in = random_tokens(1, 5, cfg.vocab, 1, "in");
  CHECK_THROWS_WITH(model.forward(in, in), Catch::Contains("exceeds the model's max_seq 4"));
  Tensor bad = random_tokens(1, 3, cfg.vocab, 1, "in");
  bad.data<std::int32_t>()[1] = 99;
  CHECK_THROWS(model.forward(bad, random_tokens(1, 3, cfg.vocab, 2, "t")));
}
