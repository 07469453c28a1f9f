// Chapter 04's experiment: the three variants trained side by side from the same weights on
// the same global batches, each traced, and the single-rank baseline they must reproduce.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/04_data_parallel/comm_overlap.hpp"
#include "common/memory_tracker.hpp"
#include "chapters/04_data_parallel/dp_trainer.hpp"

namespace usp::ch04 {

struct VariantRun {
  DpMode mode = DpMode::naive;
  std::vector<double> losses;              // global batch loss (mean over ranks), one per step
  std::int64_t timed_steps = 0;            // steps after the first (warm-up) one, or 1
  double step_seconds = 0;                 // mean over the timed steps and the ranks
  std::int64_t collectives_per_step = 0;   // all-reduces this rank issued in the last step
  std::int64_t expected_collectives = 0;   // parameters (naive, overlap) or buckets (bucketing)
  bool quiet_micro_batches = true;         // no all-reduce during a non-final micro-batch (any rank, any step)
  std::int64_t bytes_per_step = 0;         // all-reduce bytes this rank sent in the last step
  CommOverlap overlap;                     // summed over the ranks' traced steps
  MemCounts peak;                          // this rank's peak bytes per category during the run
  std::int64_t peak_total = 0;
};

// Trains cfg for `steps` steps on every rank of comm (collective). The steps after the first
// are traced and timed; with trace_dir non-empty, the trace is written there as
// trace_<mode>.json and trace_<mode>.csv (write_trace). comm carries the gradients (tensors on
// cfg.train.device); host carries the per-rank summaries (CPU values): the same communicator on
// CPU ranks, the CPU world beside NCCL or host staging on GPUs.
VariantRun run_variant(const DpConfig& cfg, Communicator& comm, Communicator& host, const Dataset& data,
                       std::int64_t steps, const std::string& trace_dir);

// The single-rank baseline: one model on cfg.device, the whole global batch (samples
// [0, global_batch)) in one forward and backward per step, AdamW. Returns the loss of each step.
// Not collective.
std::vector<double> run_baseline(const TrainingConfig& cfg, const Dataset& data, std::int64_t global_batch,
                                 std::int64_t steps);

}  // namespace usp::ch04
