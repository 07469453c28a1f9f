// One ZeRO configuration trained for a few steps and measured: the losses, this rank's memory by
// category (resident state between steps, and peaks), its communicated bytes, and the final
// parameters (for comparing stages with each other).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/data/dataset.hpp"
#include "common/memory_tracker.hpp"
#include "common/trace.hpp"
#include "common/train/training_flags.hpp"
#include "common/train/variant_runner.hpp"
#include "chapters/05_zero/state_bytes.hpp"
#include "chapters/05_zero/zero_trainer.hpp"

namespace usp::ch05 {

struct StageResult {
  ZeroOptions options;
  std::vector<double> losses;     // global mean loss per step (the runner's)
  MemCounts resident;             // this rank's tracked bytes after the last step
  MemCounts peak;                 // this rank's peaks, from building the trainer to the end
  StateBytes formula;             // what state_bytes.hpp says this rank keeps
  CommStats comm;                 // this rank, on the data-parallel communicator, all steps
  std::vector<float> parameters;  // the final parameters, flat order (the same on every rank)
  int max_units_held = 0;         // stage 3
  double seconds = 0;             // wall time of the steps (the runner's)
  std::vector<std::int64_t> val_steps;  // --eval-every: the steps after which ...
  std::vector<double> val_losses;       // ... the held-out loss was evaluated, and that loss
  // Traced runs, this rank: of the time the all-gathers (reduce-scatters) really ran, the
  // fraction during which this rank was computing; and the traced step's length.
  double gather_hidden = 0, reduce_hidden = 0, traced_step_ms = 0;
};

// "DP", "ZeRO-1", "ZeRO-2", "ZeRO-3", "ZeRO-3 (no prefetch)".
std::string stage_label(const ZeroOptions& options);

// Trains cfg.steps steps of grad_acc micro-batches per rank on dp through `runner` (the steps,
// their time, the traced last step, the losses' mean over its metrics communicator, which also
// carries the final parameters: variant_runner.hpp), so dp's byte counters hold exactly what the
// stage communicates. With trace_name non-empty, the last step is traced and written to the
// runner's trace_dir/trace_name.{json,csv}.
// With eval_batches > 0, the variant has the runner's validation hook (--eval-every): ZeRO is data
// parallelism, so the held-out loss is evaluated as chapter 04 does, on a replica split over the
// ranks (validation_loss.hpp: the single-rank value's bits). The replica's parameters are the full
// ones (trainer.full_parameters: under ZeRO-2/3 gathered, as ZeRO-3 does for every forward) over
// metrics, so dp's counters keep the training traffic alone, and off the tracker's books, so the
// peaks are the steps'.
StageResult run_stage(VariantRunner& runner, Communicator& dp, Communicator& metrics, const TrainingConfig& cfg,
                      const Dataset& data, std::int64_t grad_acc, const ZeroOptions& options,
                      const std::string& trace_name = "", std::int64_t eval_batches = 0);

}  // namespace usp::ch05
