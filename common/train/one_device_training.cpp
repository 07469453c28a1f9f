#include "common/train/one_device_training.hpp"

#include <algorithm>
#include <chrono>

#include "common/memory_tracker.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/rank_model.hpp"

namespace usp {

OneDeviceRun train_on_one_device(const TrainingConfig& cfg, const Dataset& data, const ModelOptions& options,
                                 const OneDeviceTraining& how, const StepLines& lines) {
  MemoryTracker& tracker = MemoryTracker::instance();
  RankModel m = build_rank_model(cfg, StoreLayout{}, options);
  OneDeviceRun run;
  const std::int64_t before = tracker.current()[MemCategory::Activation];
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    if (how.measure_forward_peak) tracker.reset_peak();
    m.store->zero_grad();
    const Batch b = data.batch(step, 0, cfg.mbs, cfg.seq);
    run.losses.push_back(m.model->forward(b.inputs, b.targets));
    require_finite_loss(run.losses.back(), step, "loss", how.run);
    if (how.measure_forward_peak)
      run.peak_forward_activation_bytes =
          std::max(run.peak_forward_activation_bytes, tracker.peak()[MemCategory::Activation] - before);
    m.model->backward();
    m.optimizer->step(*m.store);
    lines.print(how.label, step, run.losses.back(), cfg.tokens_per_micro_batch(),
                static_cast<double>(m.model->flops().model()), start);
  }
  return run;
}

}  // namespace usp
