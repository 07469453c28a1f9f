// Chapter 03: k micro-batches of b samples (exercise 03.1) give the one-batch-of-k·b update,
// and the peak activation memory is one micro-batch's whatever k is.
#include <catch2/catch.hpp>

#include <cmath>

#include "chapters/03_grad_accumulation/big_batch_comparison.hpp"
#include "tests/support/elementwise_check.hpp"

using namespace usp;
using namespace usp::ch03;
using namespace usp::testing;

namespace {
TrainingConfig tiny() {
  return {.model = ModelConfig::builtin("usp-tiny"), .seq = 24, .mbs = 2, .adamw = {.lr = 1e-3}};
}

// One store, model and optimizer from the seed of cfg (the store initialised before the optimizer
// reads it: the comma in the model's initialiser).
struct Trainee {
  ParamStore params;
  Model model;
  AdamW optimizer;
  explicit Trainee(const TrainingConfig& cfg) : params(cfg.model), model((params.init(cfg.seed), params)),
                                               optimizer(params, cfg.adamw) {}
};

// The gradient the step must have used, against the reference: fp32 reassociation over a few
// hundred per-token terms moves each element by a few ulps of the largest, 1e-5 of the largest
// element bounds it; a wrong weight is an O(1) relative error.
void check_gradient(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(max_abs(want) > 0);
  CHECK(elementwise_mismatch(got, want, Tolerance::absolute(1e-5 * max_abs(want))) == "");
}

}  // namespace

TEST_CASE("exercise 03.1: k accumulated micro-batches equal one big batch", "[ch03]") {
  const TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  std::int64_t peak_k1 = -1;
  for (std::int64_t k : {1, 2, 4}) {
    INFO("k = " << k);
    const BigBatchComparison c = compare_with_big_batch(cfg, *data, k);
    // The loss: the mean of k micro-batch means of equal size is the big batch's mean; both are
    // double sums of fp32 per-token losses, so they differ only in the last bits.
    CHECK(std::fabs(c.loss_accumulated - c.loss_big) <= 1e-6 * c.loss_big);
    // Gradients: the same sum of per-token contributions, grouped into k partial sums instead of
    // one; fp32 reassociation over ≤ k·b·s = 192 terms moves each element by a few ulps of the
    // largest terms: 1e-5 of the largest gradient element bounds it with room to spare, while a
    // missing 1/k scale or a lost micro-batch is an O(1) relative error.
    CHECK(c.max_grad > 0);
    CHECK(c.max_grad_diff <= 1e-5 * c.max_grad);
    // Parameters after one AdamW step, where the update is well conditioned (|g| ≥ 1e-3·max|g|,
    // see big_batch_comparison.hpp): there the gradient's relative error δ ≤ 1e-2 moves the
    // update lr·g/(|g|+eps) by ≤ lr·δ·eps/|g| < 1e-12, so what remains is the rounding of w
    // itself: the norm weights sit near 1 (ulp 1.2e-7), the others below 1, so 2 ulps of 1,
    // 2.4e-7 absolute. Everywhere, the difference is at most 2·lr.
    CHECK(c.max_param_diff_conditioned <= 2.4e-7);
    CHECK(c.max_param_diff <= 2 * cfg.adamw.lr);
    // Memory: k micro-batches never hold more than one micro-batch's activations.
    if (k == 1) peak_k1 = c.peak_activation_accumulated;
    CHECK(c.peak_activation_accumulated == peak_k1);
    if (k > 1) CHECK(c.peak_activation_big > c.peak_activation_accumulated);
  }
}

TEST_CASE("exercise 03.1: accumulated training follows the big-batch run's losses over several steps", "[ch03]") {
  TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  ParamStore acc_p(cfg.model), big_p(cfg.model);
  acc_p.init(cfg.seed);
  big_p.init(cfg.seed);
  Model acc_m(acc_p), big_m(big_p);
  AdamW acc_o(acc_p, cfg.adamw), big_o(big_p, cfg.adamw);
  const std::int64_t k = 3;
  for (std::int64_t step = 0; step < 3; ++step) {
    std::vector<Batch> micro;
    for (std::int64_t j = 0; j < k; ++j) micro.push_back(data->batch(step, j * cfg.mbs, cfg.mbs, cfg.seq));
    const double acc_loss = accumulation_step(acc_m, acc_o, micro);
    const Batch big = data->batch(step, 0, k * cfg.mbs, cfg.seq);
    big_p.zero_grad();
    const double big_loss = big_m.forward(big.inputs, big.targets);
    big_m.backward();
    big_o.step(big_p);
    // The weights may differ by up to ~lr where a gradient element was near 0 (see above), and
    // such differences enter the next forward: after 3 steps of lr = 1e-3 the loss may move by
    // a few 1e-6 relative. A missing 1/k or a dropped micro-batch moves it by far more.
    CHECK(std::fabs(acc_loss - big_loss) <= 2e-5 * big_loss);
  }
}

TEST_CASE("exercise 03.1: uneven micro-batches (2, 2, 2, 1 samples) equal one batch of 7", "[ch03]") {
  const TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  Trainee acc(cfg), big(cfg);
  std::vector<Batch> micro;
  for (const auto& [first, count] : {std::pair{0, 2}, std::pair{2, 2}, std::pair{4, 2}, std::pair{6, 1}})
    micro.push_back(data->batch(0, first, count, cfg.seq));
  acc.params.flat_grad().fill(7.0f);  // the previous step's gradient, or anything
  const double loss = accumulation_step(acc.model, acc.optimizer, micro);

  const Batch all = data->batch(0, 0, 7, cfg.seq);
  big.params.zero_grad();
  const double want = big.model.forward(all.inputs, all.targets);
  big.model.backward();
  INFO("exercise 03.1: micro-batches of 2, 2, 2 and 1 samples against one batch of 7; the loss " << want);
  CHECK(std::fabs(loss - want) <= 1e-6 * want);
  CHECK(acc.optimizer.step_count() == 1);
  INFO("the store's gradient after the step: the big batch's");
  check_gradient(acc.params.flat_grad().to_floats(), big.params.flat_grad().to_floats());
}

TEST_CASE("exercise 03.1: micro-batches of different lengths count by their tokens", "[ch03]") {
  const TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  // 2 samples of 24 tokens and 3 of 8: 48 and 24 tokens; a 1/k or per-sample weight is off.
  const std::vector<Batch> micro = {data->batch(0, 0, 2, 24), data->batch(0, 2, 3, 8)};
  Trainee acc(cfg), ref(cfg);
  const double loss = accumulation_step(acc.model, acc.optimizer, micro);

  // The reference: each micro-batch's own mean and gradient, weighted by its tokens.
  std::vector<double> grad(static_cast<std::size_t>(ref.params.numel()), 0.0);
  double want = 0;
  for (const Batch& mb : micro) {
    const double w = static_cast<double>(mb.inputs.numel()) / 72.0;
    ref.params.zero_grad();
    want += w * ref.model.forward(mb.inputs, mb.targets);
    ref.model.backward();
    const std::vector<float> g = ref.params.flat_grad().to_floats();
    for (std::size_t e = 0; e < g.size(); ++e) grad[e] += w * g[e];
  }
  INFO("exercise 03.1: 48 tokens and 24 tokens, weights 2/3 and 1/3; the loss " << want);
  CHECK(std::fabs(loss - want) <= 1e-6 * want);
  CHECK(acc.optimizer.step_count() == 1);
  INFO("the store's gradient after the step: 2/3 of the first micro-batch's mean gradient + 1/3 of the second's");
  check_gradient(acc.params.flat_grad().to_floats(), std::vector<float>(grad.begin(), grad.end()));
}

TEST_CASE("exercise 03.1: unusable micro-batches are refused before anything changes", "[ch03]") {
  const TrainingConfig cfg = tiny();
  const auto data = make_dataset("synthetic", cfg.seed);
  Trainee t(cfg);
  t.params.flat_grad().fill(3.0f);
  const std::vector<float> before = t.params.flat().to_floats();
  std::vector<Batch> micro = {data->batch(0, 0, 2, cfg.seq), data->batch(0, 2, 2, cfg.seq)};
  INFO("exercise 03.1: accumulation_step must refuse with the contract's message");
  SECTION("no micro-batch") {
    CHECK_THROWS_AS(accumulation_step(t.model, t.optimizer, {}), UsageError);
    CHECK_THROWS_WITH(accumulation_step(t.model, t.optimizer, {}),
                      Catch::StartsWith("gradient accumulation needs at least one micro-batch"));
  }
  SECTION("targets of another shape than the inputs") {
    micro[1].targets = data->batch(0, 2, 2, cfg.seq - 1).targets;
    CHECK_THROWS_WITH(accumulation_step(t.model, t.optimizer, micro),
                      Catch::StartsWith("accumulation_step: micro-batch 1 has inputs [2, 24] and targets [2, 23]"));
  }
  SECTION("a micro-batch without a token") {
    micro.push_back(Batch{Tensor::zeros({0, cfg.seq}, DType::i32), Tensor::zeros({0, cfg.seq}, DType::i32)});
    CHECK_THROWS_WITH(accumulation_step(t.model, t.optimizer, micro),
                      Catch::StartsWith("accumulation_step: micro-batch 2 holds no token"));
  }
  SECTION("the last micro-batch longer than the model's context") {
    micro.push_back(data->batch(0, 4, 1, cfg.model.max_seq + 1));
    CHECK_THROWS_WITH(accumulation_step(t.model, t.optimizer, micro),
                      Catch::StartsWith("accumulation_step: micro-batch 2 is " + std::to_string(cfg.model.max_seq + 1) +
                                        " tokens long, the model's max_seq is " + std::to_string(cfg.model.max_seq)));
  }
  SECTION("a token outside the vocabulary in the last micro-batch's targets") {
    Batch bad = data->batch(0, 4, 2, cfg.seq);
    bad.targets.data<std::int32_t>()[5] = static_cast<std::int32_t>(cfg.model.vocab);
    micro.push_back(bad);
    CHECK_THROWS_WITH(accumulation_step(t.model, t.optimizer, micro),
                      Catch::StartsWith("accumulation_step: micro-batch 2 holds token " + std::to_string(cfg.model.vocab) +
                                        " outside the vocabulary [0, " + std::to_string(cfg.model.vocab) + ")"));
  }
  SECTION("a negative token in the inputs") {
    micro[1].inputs.data<std::int32_t>()[0] = -3;
    CHECK_THROWS_WITH(accumulation_step(t.model, t.optimizer, micro),
                      Catch::StartsWith("accumulation_step: micro-batch 1 holds token -3 outside the vocabulary [0, " +
                                        std::to_string(cfg.model.vocab) + ")"));
  }
  INFO("after the refusal: the gradients still 3 everywhere, the parameters and the optimizer untouched");
  CHECK(t.optimizer.step_count() == 0);
  const std::vector<float> grads = t.params.flat_grad().to_floats();
  CHECK(elementwise_mismatch(grads, std::vector<float>(grads.size(), 3.0f), Tolerance::exact()) == "");
  CHECK(elementwise_mismatch(t.params.flat().to_floats(), before, Tolerance::exact()) == "");
}
