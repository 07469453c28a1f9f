// Bit-exact resume: 4 training steps in one go equal 2 steps, a checkpoint (parameters,
// optimizer state, trainer state), a fresh ParamStore/Model/AdamW loaded from it, and 2 more
// steps — the losses of steps 3-4 and the final parameters and optimizer state identical bit
// for bit. Nothing is recomputed differently after a resume: the data of step s is a pure
// function of (seed, s, i), and the optimizer continues from the same m, v, master and t.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/io/checkpoint.hpp"
#include "tests/io/io_fixtures.hpp"
#include "common/model/model.hpp"

using namespace usp;
using usp::testing::TempDir;

namespace {

constexpr std::int64_t kSeq = 16, kBatch = 4, kSteps = 4, kSaveAt = 2;
constexpr std::uint64_t kSeed = 1234;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

bool same_losses(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

AdamWConfig adamw_config() {
  AdamWConfig c;
  c.weight_decay = 0.05;  // not the default, so a resume that ignored the saved config would differ
  return c;
}

// One training step on step s of the data; returns its loss.
double train_step(ParamStore& params, Model& model, AdamW& opt, const Dataset& data, std::int64_t s) {
  const Batch b = data.batch(s, 0, kBatch, kSeq);
  params.zero_grad();
  const double loss = model.forward(b.inputs, b.targets);
  model.backward();
  opt.step(params);
  return loss;
}

}  // namespace

TEST_CASE("training resumed from a checkpoint continues bit for bit", "[io][resume]") {
  TempDir dir("resume");
  const ModelConfig config = ModelConfig::builtin("usp-tiny");
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO("precision " << dtype_name(dtype));
    const ModelOptions options{Recompute::none, dtype};
    const auto data = make_dataset("synthetic", kSeed);

    // Uninterrupted: steps 0..3.
    ParamStore a(config, dtype);
    a.init(kSeed);
    Model model_a(a, options);
    AdamW opt_a(a, adamw_config());
    std::vector<double> losses_a;
    for (std::int64_t s = 0; s < kSteps; ++s) losses_a.push_back(train_step(a, model_a, opt_a, *data, s));

    // Interrupted: steps 0..1, then a checkpoint; everything is thrown away after saving.
    const std::string ckpt = dir / dtype_name(dtype);
    {
      ParamStore b(config, dtype);
      b.init(kSeed);
      Model model_b(b, options);
      AdamW opt_b(b, adamw_config());
      TrainerState state;
      state.seed = kSeed;
      state.data = data->spec();
      state.seq = kSeq;
      state.global_batch = kBatch;
      for (std::int64_t s = 0; s < kSaveAt; ++s) state.losses.push_back(train_step(b, model_b, opt_b, *data, s));
      state.step = kSaveAt;
      save_checkpoint(ckpt, b, &opt_b, &state);
    }

    // Resumed: everything rebuilt from the directory alone.
    const TrainerState state = load_trainer_state(ckpt);
    REQUIRE(state.step == kSaveAt);
    ParamStore c(load_config(ckpt), load_dtype(ckpt));
    load_params(ckpt, c);
    Model model_c(c, options);
    AdamW opt_c(c, load_optimizer_config(ckpt));
    load_optimizer(ckpt, opt_c);
    const auto resumed_data = make_dataset(state.data, state.seed);
    std::vector<double> losses_c = state.losses;
    for (std::int64_t s = state.step; s < kSteps; ++s) losses_c.push_back(train_step(c, model_c, opt_c, *resumed_data, s));

    INFO("uninterrupted " << losses_a[2] << ", " << losses_a[3] << "; resumed " << losses_c[2] << ", " << losses_c[3]);
    CHECK(same_losses(losses_c, losses_a));
    CHECK(same_bytes(c.flat(), a.flat()));
    CHECK(same_bytes(opt_c.m(), opt_a.m()));
    CHECK(same_bytes(opt_c.v(), opt_a.v()));
    if (dtype == DType::bf16) CHECK(same_bytes(opt_c.master(), opt_a.master()));
    CHECK(opt_c.step_count() == kSteps);

    // The comparison has teeth: resuming without the optimizer state (fresh m, v, t = 0) does
    // not reproduce step 4.
    ParamStore d(load_config(ckpt), load_dtype(ckpt));
    load_params(ckpt, d);
    Model model_d(d, options);
    AdamW fresh(d, load_optimizer_config(ckpt));
    train_step(d, model_d, fresh, *resumed_data, 2);
    const double step4 = train_step(d, model_d, fresh, *resumed_data, 3);
    CHECK(step4 != losses_a[3]);
  }
}
