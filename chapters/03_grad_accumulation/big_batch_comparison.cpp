#include "chapters/03_grad_accumulation/big_batch_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace usp::ch03 {

namespace {

std::int64_t activation_peak_of(const std::function<void()>& run) {
  MemoryTracker& tracker = MemoryTracker::instance();
  const std::int64_t base = tracker.current()[MemCategory::Activation];
  tracker.reset_peak();
  run();
  return tracker.peak()[MemCategory::Activation] - base;
}

}  // namespace

BigBatchComparison compare_with_big_batch(const TrainingConfig& cfg, const Dataset& data, std::int64_t k,
                                          std::int64_t step) {
  BigBatchComparison r;
  r.k = k;
  r.mbs = cfg.mbs;

  // k micro-batches of mbs samples: the student's loop.
  ParamStore acc_params(cfg.model, cfg.dtype, cfg.device);
  acc_params.init(cfg.seed);
  Model acc_model(acc_params, cfg.model_options());
  AdamW acc_opt(acc_params, cfg.adamw);
  std::vector<Batch> micro;
  for (std::int64_t j = 0; j < k; ++j) micro.push_back(data.batch(step, j * cfg.mbs, cfg.mbs, cfg.seq));
  r.peak_activation_accumulated =
      activation_peak_of([&] { r.loss_accumulated = accumulation_step(acc_model, acc_opt, micro); });
  micro.clear();

  // One batch of k·mbs samples, the reference.
  ParamStore big_params(cfg.model, cfg.dtype, cfg.device);
  big_params.init(cfg.seed);
  Model big_model(big_params, cfg.model_options());
  AdamW big_opt(big_params, cfg.adamw);
  const Batch big = data.batch(step, 0, k * cfg.mbs, cfg.seq);
  r.peak_activation_big = activation_peak_of([&] {
    big_params.zero_grad();
    r.loss_big = big_model.forward(big.inputs, big.targets);
    big_model.backward();
    big_opt.step(big_params);
  });

  const auto ga = acc_params.flat_grad().to_floats(), gb = big_params.flat_grad().to_floats();
  const auto pa = acc_params.flat().to_floats(), pb = big_params.flat().to_floats();
  for (std::size_t i = 0; i < ga.size(); ++i) {
    r.max_grad = std::max(r.max_grad, static_cast<double>(std::fabs(gb[i])));
    r.max_grad_diff = std::max(r.max_grad_diff, static_cast<double>(std::fabs(ga[i] - gb[i])));
    r.max_param_diff = std::max(r.max_param_diff, static_cast<double>(std::fabs(pa[i] - pb[i])));
  }
  for (std::size_t i = 0; i < ga.size(); ++i)
    if (std::fabs(gb[i]) >= 1e-3 * r.max_grad)
      r.max_param_diff_conditioned = std::max(r.max_param_diff_conditioned, static_cast<double>(std::fabs(pa[i] - pb[i])));
  return r;
}

}  // namespace usp::ch03
