#include "chapters/12_flash_attention/flash_training.hpp"

#include "chapters/12_flash_attention/flash_model_attention.hpp"
#include "common/memory_tracker.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/finite_loss.hpp"

namespace usp::ch12 {

TrainingRun train_with(const TrainingConfig& cfg, const Dataset& data, bool flash, FlashTiles tiles,
                       const StepLines& lines) {
  MemoryTracker& tracker = MemoryTracker::instance();
  ParamStore params(cfg.model, cfg.dtype, cfg.device);
  params.init(cfg.seed);
  FlashModelAttention attention(tiles);
  ModelOptions options = cfg.model_options();
  if (flash) options.attention = &attention;
  Model model(params, options);
  AdamW optimizer(params, cfg.adamw);
  TrainingRun run;
  const std::int64_t before = tracker.current()[MemCategory::Activation];
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    tracker.reset_peak();
    params.zero_grad();
    const Batch b = data.batch(step, 0, cfg.mbs, cfg.seq);
    run.losses.push_back(model.forward(b.inputs, b.targets));
    require_finite_loss(run.losses.back(), step, "loss", flash ? "flash attention" : "naive attention");
    run.peak_activation_bytes = std::max(run.peak_activation_bytes, tracker.peak()[MemCategory::Activation] - before);
    model.backward();
    optimizer.step(params);
    lines.print(flash ? "flash" : "naive", step, run.losses.back(), cfg.tokens_per_micro_batch(),
                static_cast<double>(model.flops().model()), start);
  }
  return run;
}

}  // namespace usp::ch12
