#include "chapters/14_mixed_precision/precision_training.hpp"

#include <algorithm>
#include <cmath>

#include "common/float_formats.hpp"
#include "common/memory_tracker.hpp"
#include "common/train/rank_model.hpp"

namespace usp::ch14 {

namespace {

// Each recipe: its name, the dtype of its parameters, gradients and activations, and the usp_calc
// row its measured memory answers to (CalcRow in precision_training.hpp). In Recipe's order.
struct RecipeSpec {
  const char* name;
  DType dtype;
  const char* calc_flags;
  calc::Precision precision;
  bool fp32_grad_accum;
};
constexpr RecipeSpec kRecipes[] = {
    {"fp32", DType::f32, "--precision fp32", calc::Precision::fp32, false},
    {"bf16", DType::bf16, "--precision mixed", calc::Precision::mixed, false},
    {"fp16", DType::f16, "--precision mixed", calc::Precision::mixed, false},
    {"fp16+scaling", DType::f16, "--precision mixed --fp32-grad-accum", calc::Precision::mixed, true}};
const RecipeSpec& spec(Recipe r) { return kRecipes[static_cast<int>(r)]; }

// Each gradient element's class in the gradients' own format: exactly zero, nonzero but
// subnormal, infinite, NaN (else normal), as fractions of all elements, appended to the run; with
// `histogram` (the first step) also the counts and the binades of PrecisionRun's histogram.
void census(const Tensor& grads, PrecisionRun& run, bool histogram) {
  const std::vector<float> g = grads.to_floats();
  const float min_normal = format_info(grads.dtype()).min_normal;
  if (histogram) run.log2_histogram.assign(PrecisionRun::kHistBins, 0);
  std::int64_t zero = 0, sub = 0, inf = 0, nan = 0;
  for (float x : g) {
    if (x == 0.0f) {
      ++zero;
    } else if (std::isnan(x)) {
      ++nan;
    } else if (std::isinf(x)) {
      ++inf;  // ilogb(inf) is INT_MAX: it has no binade
    } else {
      if (std::fabs(x) < min_normal) ++sub;
      if (!histogram) continue;
      const int e = std::ilogb(x);  // |x| in [2^e, 2^(e+1))
      const int bin = std::clamp(e - PrecisionRun::kHistLow, 0, PrecisionRun::kHistBins - 1);
      ++run.log2_histogram[static_cast<std::size_t>(bin)];
    }
  }
  const double n = static_cast<double>(g.size());
  run.zero_fraction.push_back(static_cast<double>(zero) / n);
  run.subnormal_fraction.push_back(static_cast<double>(sub) / n);
  run.inf_fraction.push_back(static_cast<double>(inf) / n);
  run.nan_fraction.push_back(static_cast<double>(nan) / n);
  if (histogram) {
    run.histogram_zeros = zero;
    run.histogram_infs = inf;
    run.histogram_nans = nan;
  }
}

}  // namespace

const char* recipe_name(Recipe r) { return spec(r).name; }

CalcRow calc_row(Recipe r) {
  return {spec(r).calc_flags, calc::state_bytes_per_parameter(spec(r).precision, spec(r).fp32_grad_accum)};
}

PrecisionRun train_recipe(Recipe recipe, const TrainingConfig& cfg, const Dataset& data, LossScaleState scaler,
                          const StepLines& lines, LinearHook* linears, const std::string& label) {
  const DType dt = spec(recipe).dtype;
  MemoryTracker& tracker = MemoryTracker::instance();
  const MemCounts before = tracker.current();
  ModelOptions options = cfg.model_options();
  options.activation_dtype = dt;
  if (linears) options.linears = linears;
  TrainingConfig in_dt = cfg;
  in_dt.dtype = dt;
  // AdamW keeps fp32 master weights whenever the parameters are narrower.
  RankModel built = build_rank_model(in_dt, StoreLayout{}, options);
  ParamStore& params = *built.store;
  Model& model = *built.model;
  AdamW& optimizer = *built.optimizer;
  PrecisionRun run;
  run.recipe = label.empty() ? recipe_name(recipe) : label;
  const bool scaled = recipe == Recipe::fp16_scaled;
  // The recipe's memory, measured on the first step: the tracker's peak is reset before each
  // optimizer step. A run with its own linear blocks measures none and leaves the peak alone.
  const bool measured = linears == nullptr;
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    params.zero_grad();
    const Batch b = data.batch(step, 0, cfg.mbs, cfg.seq);
    run.losses.push_back(model.forward(b.inputs, b.targets));
    const float scale = scaled ? scaler.scale : 1.0f;
    run.scales.push_back(scale);
    model.backward(scale);
    census(params.flat_grad(), run, /*histogram=*/step == 0);
    bool apply = true;
    const std::int64_t before_step = tracker.current().total();
    if (measured) tracker.reset_peak();
    if (scaled) {
      Tensor unscaled = Tensor::empty({params.numel()}, DType::f32, MemCategory::Temporary);
      apply = unscale_and_update(params.flat_grad(), unscaled, scaler);
      if (apply) optimizer.step_range(params.flat(), unscaled);
    } else {
      optimizer.step(params);
    }
    run.applied.push_back(apply);
    if (step == 0 && measured) {
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
