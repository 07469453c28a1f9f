// FLOPs per step: the 6N + 12·L·h·s rule, what recomputation adds, and how the rule relates to
// the FLOPs the course's model really counts (ops::flop_count) on a small shape.
#include <catch2/catch.hpp>

#include <cstdint>

#include "common/calc/flops_model.hpp"
#include "common/model/model.hpp"
#include "tests/calc/calc_fixtures.hpp"

using namespace usp;
using namespace usp::calc;

namespace {
TrainingSetup setup_of(const ModelConfig& model, std::int64_t seq, std::int64_t mbs, Recompute r) {
  TrainingSetup s;
  s.model = model;
  s.seq = seq;
  s.mbs = mbs;
  s.recompute = r;
  return s;
}
}  // namespace

TEST_CASE("model FLOPs: (6N + 12·L·h·s) per token, tokens = mbs·seq·dp", "[calc][flops]") {
  const ModelConfig c = ModelConfig::builtin("llama3.1-8b");
  TrainingSetup s = setup_of(c, 4096, 1, Recompute::none);
  // (6·8030261248 + 12·32·4096·4096)·4096, exact in a double (< 2^53).
  FlopsEstimate f = flops_per_step(s);
  CHECK(f.tokens == 4096);
  CHECK(f.model == 223'739'979'497'472.0);
  CHECK(f.recompute == 0);
  s.dp = 4;
  s.mbs = 2;
  f = flops_per_step(s);
  CHECK(f.tokens == 4 * 2 * 4096);
  CHECK(f.model == 8 * 223'739'979'497'472.0);
  // TP / CP / PP split the work of the same tokens: the job's total does not change.
  s.tp = 8;
  s.cp = 2;
  s.pp = 4;
  CHECK(flops_per_step(s).model == f.model);
}

TEST_CASE("recompute FLOPs: selective adds q·kᵀ (2·L·h·s per token), full one forward (4/3 of model)",
          "[calc][flops][recompute]") {
  const ModelConfig c = ModelConfig::builtin("llama3.1-70b");
  const double tokens = 2 * 8192, lhs = 80.0 * 8192 * 8192;
  const FlopsEstimate none = flops_per_step(setup_of(c, 8192, 2, Recompute::none));
  const FlopsEstimate sel = flops_per_step(setup_of(c, 8192, 2, Recompute::selective));
  const FlopsEstimate full = flops_per_step(setup_of(c, 8192, 2, Recompute::full));
  CHECK(sel.model == none.model);  // MFU counts the model's work only
  CHECK(full.model == none.model);
  CHECK(sel.recompute == 2 * lhs * tokens);
  // (6N + 12·L·h·s)·4/3 = 8N + 16·L·h·s: a full recompute is one more forward pass. Relative
  // 1e-12: a few double roundings of numbers near 1e19.
  CHECK(full.hardware() == Approx(none.model * 4.0 / 3.0).epsilon(1e-12));
  CHECK(none.hardware() < sel.hardware());
  CHECK(sel.hardware() < full.hardware());
}

TEST_CASE("the 6N rule against the FLOPs the course's model counts", "[calc][flops][course]") {
  // The model counts matmuls only (2 per multiply-add): the layers' linear weights and the head,
  // plus attention over the full T² (the same convention). The 6N rule also counts the
  // embedding lookup and the RMSNorm weights as if they were matmul weights: exactly
  // 6·(v·h + 2·L·h + h) per token more (untied head). Selective recompute redoes q·kᵀ: equal.
  const ModelConfig cfg = small_gqa_model("calc-flops");
  const std::int64_t B = 2, T = 11, tokens = B * T;
  Tensor in = Tensor::empty({B, T}, DType::i32);
  for (std::int64_t i = 0; i < tokens; ++i) in.data<std::int32_t>()[i] = static_cast<std::int32_t>((5 * i + 1) % cfg.vocab);
  for (Recompute mode : {Recompute::none, Recompute::selective}) {
    ParamStore params(cfg);
    params.init(2);
    Model model(params, {mode, DType::f32});
    model.forward(in, in);
    model.backward();
    const StepFlops measured = model.flops();
    const FlopsEstimate f = flops_per_step(setup_of(cfg, T, B, mode));
    const std::int64_t not_matmul = cfg.vocab * cfg.hidden + 2 * cfg.layers * cfg.hidden + cfg.hidden;
    CHECK(static_cast<std::int64_t>(f.model) - measured.model() == 6 * not_matmul * tokens);
    CHECK(static_cast<std::int64_t>(f.recompute) == measured.recompute);
  }
}
