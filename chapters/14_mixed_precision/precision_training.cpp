#include "chapters/14_mixed_precision/precision_training.hpp"

#include <algorithm>
#include <cmath>

#include "common/float_formats.hpp"
#include "common/memory_tracker.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"

namespace usp::ch14 {

const char* recipe_name(Recipe r) {
  switch (r) {
    case Recipe::fp32: return "fp32";
    case Recipe::bf16: return "bf16";
    case Recipe::fp16: return "fp16";
    case Recipe::fp16_scaled: return "fp16+scaling";
  }
  return "?";
}

CalcRow calc_row(Recipe r) {
  switch (r) {
    case Recipe::fp32: return {"--precision fp32", calc::state_bytes_per_parameter(calc::Precision::fp32, false)};
    case Recipe::bf16:
    case Recipe::fp16: return {"--precision mixed", calc::state_bytes_per_parameter(calc::Precision::mixed, false)};
    case Recipe::fp16_scaled:
      return {"--precision mixed --fp32-grad-accum", calc::state_bytes_per_parameter(calc::Precision::mixed, true)};
  }
  return {"?", {}};
}

namespace {

DType dtype_of(Recipe r) {
  switch (r) {
    case Recipe::fp32: return DType::f32;
    case Recipe::bf16: return DType::bf16;
    case Recipe::fp16:
    case Recipe::fp16_scaled: return DType::f16;
  }
  return DType::f32;
}

// Each gradient element's class in the gradients' own format: exactly zero, nonzero but
// subnormal, infinite, NaN (else normal), as fractions of all elements, appended to the run.
void census(const Tensor& grads, PrecisionRun& run) {
  const std::vector<float> g = grads.to_floats();
  const float min_normal = format_info(grads.dtype()).min_normal;
  std::int64_t zero = 0, sub = 0, inf = 0, nan = 0;
  for (float x : g) {
    if (x == 0.0f) ++zero;
    else if (std::isnan(x)) ++nan;
    else if (std::isinf(x)) ++inf;
    else if (std::fabs(x) < min_normal) ++sub;
  }
  const double n = static_cast<double>(g.size());
  run.zero_fraction.push_back(static_cast<double>(zero) / n);
  run.subnormal_fraction.push_back(static_cast<double>(sub) / n);
  run.inf_fraction.push_back(static_cast<double>(inf) / n);
  run.nan_fraction.push_back(static_cast<double>(nan) / n);
}

void histogram(const Tensor& grads, PrecisionRun& run) {
  run.log2_histogram.assign(PrecisionRun::kHistBins, 0);
  for (float x : grads.to_floats()) {
    if (x == 0.0f) {
      ++run.histogram_zeros;
    } else if (std::isnan(x)) {
      ++run.histogram_nans;
    } else if (std::isinf(x)) {
      ++run.histogram_infs;  // ilogb(inf) is INT_MAX: it has no binade
    } else {
      const int e = std::ilogb(x);  // |x| in [2^e, 2^(e+1))
      const int i = std::clamp(e - PrecisionRun::kHistLow, 0, PrecisionRun::kHistBins - 1);
      ++run.log2_histogram[static_cast<std::size_t>(i)];
    }
  }
}

}  // namespace

PrecisionRun train_recipe(Recipe recipe, const TrainingConfig& cfg, const Dataset& data, LossScaleState scaler,
                          const StepLines& lines) {
  const DType dt = dtype_of(recipe);
  MemoryTracker& tracker = MemoryTracker::instance();
  const MemCounts before = tracker.current();
  ParamStore params(cfg.model, dt);
  params.init(cfg.seed);
  ModelOptions options = cfg.model_options();
  options.activation_dtype = dt;
  Model model(params, options);
  AdamW optimizer(params, cfg.adamw);  // fp32 master weights whenever the parameters are narrower
  PrecisionRun run;
  run.recipe = recipe_name(recipe);
  const bool scaled = recipe == Recipe::fp16_scaled;
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    params.zero_grad();
    const Batch b = data.batch(step, 0, cfg.mbs, cfg.seq);
    run.losses.push_back(model.forward(b.inputs, b.targets));
    const float scale = scaled ? scaler.scale : 1.0f;
    run.scales.push_back(scale);
    model.backward(scale);
    census(params.flat_grad(), run);
    if (step == 0) histogram(params.flat_grad(), run);
    bool apply = true;
    const std::int64_t before_step = tracker.current().total();
    tracker.reset_peak();
    if (scaled) {
      Tensor unscaled = Tensor::empty({params.numel()}, DType::f32, MemCategory::Temporary);
      apply = unscale_and_update(params.flat_grad(), unscaled, scaler);
      if (apply) optimizer.step_range(params.flat(), unscaled);
    } else {
      optimizer.step(params);
    }
    run.applied.push_back(apply);
    if (step == 0) {
      const MemCounts now = tracker.current();
      const auto grew = [&](MemCategory c) { return now[c] - before[c]; };
      run.memory = {params.numel(), grew(MemCategory::Parameter), grew(MemCategory::Gradient),
                    grew(MemCategory::OptimizerState), tracker.peak_total() - before_step};
    }
    lines.print(run.recipe, step, run.losses.back(), cfg.tokens_per_micro_batch(),
                static_cast<double>(model.flops().model()), start);
  }
  run.skipped_steps = scaled ? scaler.skipped_steps : 0;
  return run;
}

}  // namespace usp::ch14
