// One rank's side of data-parallel training: a full replica of the model and its optimizer,
// trained on this rank's share of every step's global batch, with the gradients averaged over
// the ranks by one of the three GradientSync variants before each optimizer step.
//
// Batch layout (docs/ARCHITECTURE.md, principle 1): the global batch of step s is samples
// [0, N_d·k·b) of the dataset, b = mbs samples per micro-batch, k = grad_acc micro-batches.
// Rank r takes samples [r·k·b, (r+1)·k·b), micro-batch j of it [r·k·b + j·b, r·k·b + (j+1)·b).
// Each micro-batch's backward is scaled by 1/k (chapter 03) and the all-reduce averages over
// the N_d ranks, so the gradient is that of the mean loss over the N_d·k·b samples: the
// single-rank baseline's gradient on the same global batch, up to fp32 reduction order.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/training_flags.hpp"
#include "chapters/04_data_parallel/gradient_sync.hpp"

namespace usp::ch04 {

struct DpConfig {
  TrainingConfig train;                          // model, seq, mbs (= b), AdamW, seed
  std::int64_t grad_acc = 1;                     // k micro-batches per optimizer step
  DpMode mode = DpMode::bucketing;
  std::int64_t bucket_cap_bytes = kDefaultBucketCapBytes;  // bucketing only
};

// What one step did on this rank.
struct DpStepStats {
  double loss = 0;                                // this rank's mean loss over its k micro-batches
  std::vector<std::int64_t> collectives_during;   // all-reduces issued during micro-batch j's forward + backward
  std::int64_t collectives_after = 0;             // ... after the last backward (GradientSync::finish)
  std::int64_t bytes_sent = 0;                    // all-reduce bytes this rank sent in the step
  double seconds = 0;                             // wall time of the step
};

class DataParallelTrainer {
 public:
  // Collective only in the sense that every rank of comm must build one with the same cfg.
  // Computes the bucket plan (exercise 04.1) in bucketing mode.
  DataParallelTrainer(const DpConfig& cfg, Communicator& comm);

  // One optimizer step on this rank's share of step `step`'s global batch (collective).
  DpStepStats step(const Dataset& data, std::int64_t step);

  std::int64_t global_batch() const { return comm_.size() * cfg_.grad_acc * cfg_.train.mbs; }
  ParamStore& params() { return *params_; }
  Model& model() { return *model_; }
  const GradientSync& sync() const { return *sync_; }

 private:
  DpConfig cfg_;
  Communicator& comm_;
  std::unique_ptr<ParamStore> params_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<GradientSync> sync_;
};

// The mean over the ranks of each rank's values (collective; the same on every rank, exactly:
// the values travel as the doubles they are (report::gather_row_lists) and are summed in rank
// order in double).
std::vector<double> mean_over_ranks(Communicator& comm, const std::vector<double>& mine);

}  // namespace usp::ch04
