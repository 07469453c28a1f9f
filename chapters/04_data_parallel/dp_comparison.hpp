// Chapter 04's experiment: the three variants trained side by side from the same weights on
// the same global batches, each traced, and the single-rank baseline they must reproduce. The
// steps run through the parallel chapters' VariantRunner (variant_runner.hpp: the progress line,
// the loss mean over the ranks, the non-finite check, the trace, the held-out loss).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/04_data_parallel/comm_overlap.hpp"
#include "chapters/04_data_parallel/dp_trainer.hpp"
#include "common/memory_tracker.hpp"
#include "common/train/variant_runner.hpp"

namespace usp::ch04 {

// One variant's row of the report (the runner's VariantRun holds its per-step series).
struct DpVariant {
  DpMode mode = DpMode::naive;
  std::vector<double> losses;              // global batch loss (mean over ranks), one per step
  std::vector<std::int64_t> val_steps;     // --eval-every: the steps after which ...
  std::vector<double> val_losses;          // ... the held-out loss was evaluated, and that loss
  std::int64_t timed_steps = 0;            // steps after the first (warm-up) one, or 1
  double step_seconds = 0;                 // mean over the timed steps and the ranks
  std::int64_t collectives_per_step = 0;   // all-reduces this rank issued in the last step
  std::int64_t expected_collectives = 0;   // parameters (naive, overlap) or buckets (bucketing)
  bool quiet_micro_batches = true;         // no all-reduce during a non-final micro-batch (any rank, any step)
  std::int64_t bytes_per_step = 0;         // all-reduce bytes this rank sent in the last step
  CommOverlap overlap;                     // summed over the ranks' traced steps
  MemCounts peak;                          // this rank's peak bytes per category during the steps
  std::int64_t peak_total = 0;
};

// Trains cfg for cfg.train.steps steps on every rank of comm with `runner` (collective over comm
// and the runner's metrics communicator). The steps after the first are traced and timed; the
// trace is written to the runner's trace_dir as trace_<mode>.json and trace_<mode>.csv. comm
// carries the gradients (tensors on cfg.train.device: TrainingComms::tensors); the runner's metrics
// communicator (TrainingComms::metrics) everything else, so comm's counters hold the gradients
// alone. With the runner's --eval-every, the held-out loss of eval_batches batches is evaluated on
// the replicated model, split over the ranks (validation_loss.hpp), between steps: outside the
// timed steps, the trace and comm's counters, and the peaks exclude what it allocates.
DpVariant run_variant(VariantRunner& runner, const DpConfig& cfg, Communicator& comm, const Dataset& data,
                      std::int64_t eval_batches);

// The single-rank baseline: one model on cfg.device, the whole global batch (samples
// [0, global_batch)) in one forward and backward per step, AdamW. Returns the loss of each step.
// Not collective.
std::vector<double> run_baseline(const TrainingConfig& cfg, const Dataset& data, std::int64_t global_batch,
                                 std::int64_t steps);

}  // namespace usp::ch04
