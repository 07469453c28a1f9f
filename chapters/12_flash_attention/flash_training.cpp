#include "chapters/12_flash_attention/flash_training.hpp"

#include "chapters/12_flash_attention/flash_model_attention.hpp"
#include "common/train/one_device_training.hpp"

namespace usp::ch12 {

TrainingRun train_with(const TrainingConfig& cfg, const Dataset& data, bool flash, FlashTiles tiles,
                       const StepLines& lines) {
  FlashModelAttention attention(tiles);
  ModelOptions options = cfg.model_options();
  if (flash) options.attention = &attention;
  const OneDeviceTraining how{.label = flash ? "flash" : "naive",
                              .run = flash ? "flash attention" : "naive attention",
                              .measure_forward_peak = true};
  const OneDeviceRun run = train_on_one_device(cfg, data, options, how, lines);
  return {run.losses, run.peak_forward_activation_bytes};
}

}  // namespace usp::ch12
