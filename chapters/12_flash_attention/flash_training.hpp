// The model trained with each attention: the same weights, data and AdamW steps, once with the
// decoder's own attention (it keeps P [B, H, T, T] per layer for the backward) and once with
// flash attention plugged in (FlashModelAttention: it keeps the log-sum-exp [B, H, T]). The
// losses agree to fp32 rounding; the peak activation memory is what differs. The loop is the
// core's one-device loop (common/train/one_device_training.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "chapters/12_flash_attention/flash_attention.hpp"
#include "common/data/dataset.hpp"
#include "common/train/step_lines.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch12 {

struct TrainingRun {
  std::vector<double> losses;
  std::int64_t peak_activation_bytes = 0;  // the largest forward's, above the model's own memory
};

// Each step's progress line through `lines` ("naive: step ...", "flash: step ...").
TrainingRun train_with(const TrainingConfig& cfg, const Dataset& data, bool flash, FlashTiles tiles,
                       const StepLines& lines = {});

}  // namespace usp::ch12
