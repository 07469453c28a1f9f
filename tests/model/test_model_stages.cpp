// Pipeline stages (ModelOptions::stage, forward_stage / backward_stage): the model cut into 2 and
// 3 stages, with several micro-batches in flight in a pipeline-like order, gives the whole
// model's losses and gradients bit for bit (the same ops on the same values, gradients
// accumulated in the same micro-batch order); each stage touches only its units; the passes in
// flight are counted; misuse is refused. The forward-only pass through the stages (evaluate_stage)
// gives the whole model's evaluate bit for bit and keeps, reports and accumulates nothing.
#include <catch2/catch.hpp>

#include "common/data/dataset.hpp"
#include "common/memory_tracker.hpp"
#include "common/model/model.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/small_model.hpp"

using namespace usp;
using usp::testing::elementwise_mismatch;

namespace {

ModelConfig stage_model() {
  return testing::small_model(
      {.name = "stages", .vocab = 256, .hidden = 16, .layers = 4, .heads = 4, .kv_heads = 2, .ffn = 24, .max_seq = 64});
}

ModelOptions stage_options(int first, int last, Recompute r) {
  ModelOptions o;
  o.recompute = r;
  o.stage = {first, last};
  return o;
}

}  // namespace

TEST_CASE("a model cut into stages, micro-batches in flight, equals the whole model bit for bit", "[model][stages]") {
  const ModelConfig c = stage_model();
  const auto data = make_dataset("synthetic", 3);
  const std::int64_t B = 2, T = 8, m = 3;
  for (Recompute r : {Recompute::none, Recompute::full}) {
    for (std::vector<int> cuts : {std::vector<int>{0, 2, 6}, std::vector<int>{0, 1, 3, 6}}) {
      INFO("recompute " << recompute_name(r) << ", " << cuts.size() - 1 << " stages");
      // The whole model: micro-batches one after the other.
      ParamStore whole(c);
      whole.init(9);
      Model full(whole, {r});
      std::vector<double> want;
      for (std::int64_t j = 0; j < m; ++j) {
        const Batch b = data->batch(0, j * B, B, T);
        want.push_back(full.forward(b.inputs, b.targets));
        full.backward(1.0f / m);
      }
      // Stages over one store (each reads and writes only its units): every forward first (all
      // micro-batches in flight, as all-forward-all-backward does), then the backwards in order.
      ParamStore staged(c);
      staged.init(9);
      std::vector<std::unique_ptr<Model>> stages;
      for (std::size_t s = 0; s + 1 < cuts.size(); ++s)
        stages.push_back(std::make_unique<Model>(staged, stage_options(cuts[s], cuts[s + 1] - 1, r)));
      std::vector<double> got;
      for (std::int64_t j = 0; j < m; ++j) {
        const Batch b = data->batch(0, j * B, B, T);
        Tensor x;
        double loss = 0;
        for (std::size_t s = 0; s < stages.size(); ++s) {
          StageInput in{.tokens = s == 0 ? b.inputs : Tensor(), .targets = s + 1 == stages.size() ? b.targets : Tensor(),
                        .x = x, .batch = B, .seq = T};
          Tensor out;
          loss = stages[s]->forward_stage(static_cast<int>(j), in, out);
          x = out;
        }
        got.push_back(loss);
      }
      for (const auto& s : stages) CHECK(s->passes_held() == m);
      for (std::int64_t j = 0; j < m; ++j) {
        Tensor dy;
        for (std::size_t s = stages.size(); s-- > 0;) {
          Tensor dx;
          stages[s]->backward_stage(static_cast<int>(j), dy, 1.0f / m, dx);
          CHECK(dx.defined() == (s > 0));
          dy = dx;
        }
      }
      for (const auto& s : stages) CHECK(s->passes_held() == 0);
      CHECK(got == want);
      CHECK(elementwise_mismatch(staged.flat_grad().to_floats(), whole.flat_grad().to_floats()) == "");
    }
  }
}

TEST_CASE("a stage touches only its units' parameters and gradients", "[model][stages]") {
  const ModelConfig c = stage_model();
  const auto data = make_dataset("synthetic", 3);
  const Batch b = data->batch(0, 0, 2, 8);
  // Only units 2..3 (layers 1 and 2) are materialized: the stage must not read anything else.
  ParamStore units(c, DType::f32, Device::cpu(), StoreLayout{Residency::per_unit, Residency::per_unit, 1});
  for (int u : {2, 3}) units.materialize_params(u), units.materialize_grads(u);
  Model middle(units, stage_options(2, 3, Recompute::none));
  Tensor x = Tensor::zeros({16, c.hidden}, DType::f32, MemCategory::Activation), out, dx;
  middle.forward_stage(7, {.x = x, .batch = 2, .seq = 8}, out);
  REQUIRE(out.defined());
  CHECK(out.shape() == Shape{16, c.hidden});
  middle.backward_stage(7, Tensor::zeros({16, c.hidden}), 1.0f, dx);
  CHECK(dx.shape() == Shape{16, c.hidden});
}

TEST_CASE("evaluate_stage through the stages equals evaluate, and keeps nothing", "[model][stages]") {
  const ModelConfig c = stage_model();
  const auto data = make_dataset("synthetic", 3);
  const std::int64_t B = 2, T = 8;
  const Batch b = data->batch(0, 0, B, T);
  ParamStore store(c);
  store.init(9);
  Model whole(store);
  const double want = whole.evaluate(b.inputs, b.targets);
  const std::vector<int> cuts = {0, 1, 3, 6};
  std::vector<std::unique_ptr<Model>> stages;
  int hook_calls = 0;
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
    stages.push_back(std::make_unique<Model>(store, stage_options(cuts[s], cuts[s + 1] - 1, Recompute::none)));
    ModelHooks hooks;
    hooks.before_forward = hooks.after_forward = [&](int) { ++hook_calls; };
    hooks.grad_ready = [&](int) { ++hook_calls; };
    stages.back()->set_hooks(hooks);
  }
  MemoryTracker& tracker = MemoryTracker::instance();
  store.zero_grad();
  const std::int64_t activations = tracker.current()[MemCategory::Activation];
  tracker.reset_peak();
  Tensor x;
  double got = -1;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    StageInput in{.tokens = s == 0 ? b.inputs : Tensor(), .targets = s + 1 == stages.size() ? b.targets : Tensor(),
                  .x = x, .batch = B, .seq = T};
    Tensor out;
    got = stages[s]->evaluate_stage(in, out);
    INFO("stage " << s);
    CHECK(out.defined() == (s + 1 < stages.size()));  // the last stage returns the loss, no output
    if (s + 1 < stages.size()) {
      CHECK(got == 0.0);
      CHECK(out.category() == MemCategory::Temporary);
    }
    CHECK(stages[s]->passes_held() == 0);
    x = out;
  }
  CHECK(got == want);  // the same ops on the same values
  CHECK(hook_calls == 0);
  CHECK(tracker.peak()[MemCategory::Activation] == activations);  // no activation made, none kept
  const Tensor& g = store.flat_grad();  // on the CPU
  const float* gp = g.data<float>();
  std::int64_t nonzero = 0;
  for (std::int64_t i = 0; i < g.numel(); ++i) nonzero += gp[i] != 0.0f;
  CHECK(nonzero == 0);  // no gradient
}

TEST_CASE("stages: misuse is refused with a clear message", "[model][stages]") {
  const ModelConfig c = stage_model();
  ParamStore p(c);
  CHECK_THROWS_WITH(Model(p, stage_options(3, 2, Recompute::none)), Catch::Contains("a pipeline stage holds units 3..2"));
  CHECK_THROWS_WITH(Model(p, stage_options(0, 6, Recompute::none)), Catch::Contains("outside the model's 0..5"));
  ModelConfig tied = c;
  tied.tied_embeddings = true;
  ParamStore pt(tied);
  CHECK_THROWS_WITH(Model(pt, stage_options(3, -1, Recompute::none)), Catch::Contains("tied head reads the embedding"));
  Model first(p, stage_options(0, 2, Recompute::none));
  Tensor out, dx;
  CHECK_THROWS_WITH(first.forward_stage(0, {.batch = 2, .seq = 8}, out),
                    Catch::StartsWith("Model::forward_stage: the first stage needs the tokens"));
  // The forward-only pass names itself, not forward_stage.
  CHECK_THROWS_WITH(first.evaluate_stage({.batch = 2, .seq = 8}, out),
                    Catch::StartsWith("Model::evaluate_stage: the first stage needs the tokens"));
  CHECK_THROWS_WITH(first.evaluate_stage({}, out), Catch::StartsWith("Model::evaluate_stage: the batch's B and T must be given"));
  CHECK_THROWS_WITH(first.backward_stage(4, Tensor(), 1.0f, dx), Catch::Contains("micro-batch 4 has no forward"));
  CHECK_THROWS_WITH(first.evaluate(Tensor(), Tensor()), Catch::Contains("not a pipeline stage"));
  Model last(p, stage_options(3, -1, Recompute::none));
  CHECK_THROWS_WITH(last.forward_stage(0, {.batch = 2, .seq = 8}, out),
                    Catch::StartsWith("Model::forward_stage: a stage after the first needs the previous stage's output"));
  CHECK_THROWS_WITH(last.evaluate_stage({.batch = 2, .seq = 8}, out),
                    Catch::StartsWith("Model::evaluate_stage: a stage after the first needs the previous stage's output"));
}
