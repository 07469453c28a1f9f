// One schedule trained for a few steps on the run's ranks (PpTrainer) and measured: the losses,
// the step times, every pipeline rank's last step as the executor recorded it (op times,
// activations in flight, the tracker's Activation bytes), the parameters this rank holds, its
// peak memory by category and the bytes it sent. The last step is traced (<dir>/trace_<name>).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/08_pipeline_parallel/pp_trainer.hpp"
#include "common/data/dataset.hpp"
#include "common/memory_tracker.hpp"
#include "common/train/variant_runner.hpp"

namespace usp::ch08 {

struct ScheduleRun {
  PpLayout layout;
  Schedule schedule;
  std::vector<UnitRange> stages;        // every virtual stage's units
  std::vector<double> losses;           // per step: the global mean (the runner's)
  std::vector<double> step_seconds;     // per step, this rank's wall time (the runner's)
  std::vector<std::int64_t> val_steps;  // --eval-every: the steps after which ...
  std::vector<double> val_losses;       // ... the held-out loss was evaluated, and that loss
  std::vector<ExecutedStep> last_step;  // every pipeline rank's last step (the same on every rank)
  int pp_rank = 0;                      // this rank's place in its pipeline
  std::int64_t params_held = 0;         // this rank
  MemCounts peak;                       // this rank, over the run
  CommStats pp_comm, dp_comm;           // this rank, every step

  double median_step_seconds() const;
};

// Through `runner` (the steps, their times, the losses' mean over its metrics communicator, the
// last step traced as <runner's trace_dir>/trace_<schedule>: variant_runner.hpp).
// With eval_batches > 0, the schedule has the runner's validation hook (--eval-every): the held-out
// loss of eval_batches batches of cfg.mbs through the pipeline (PpTrainer::held_out_loss, the
// replicas' split over a group of the metrics communicator), outside the peaks and with its
// activations' bytes taken out of pp_comm (held_out_traffic.hpp).
ScheduleRun train_schedule(VariantRunner& runner, Communicator& world, const TrainingConfig& cfg, const Dataset& data,
                           const PpLayout& layout, std::int64_t eval_batches = 0);

}  // namespace usp::ch08
