// One 5D layout trained for a few steps on the run's ranks (Trainer5d) and measured: the global
// losses, the step time, and for every rank its mesh coordinates, the bytes it holds by category
// (the tracker's peaks during the run) next to the calculator's prediction for its pipeline stage,
// and the bytes it sent over each dimension's group.
#pragma once
#include <cstdint>
#include <vector>

#include "chapters/10_5d_parallelism/layout_5d.hpp"
#include "common/data/dataset.hpp"
#include "common/train/training_flags.hpp"
#include "common/train/variant_runner.hpp"

namespace usp::ch10 {

// One rank's row of the report, gathered as it is (report/row_gather.hpp): numbers only.
struct RankFacts {
  int dp = 0, tp = 0, cp = 0, pp = 0;
  // Measured (tracker, bytes this run added) and predicted (calc::memory_per_rank, fp32, this
  // rank's stage; ZeRO-1's optimizer: the largest shard, ceil(N / dp·cp)); -1: not predicted
  // (several chunks per rank).
  std::int64_t params = 0, grads = 0, optimizer = 0, activations = 0;
  std::int64_t calc_params = -1, calc_grads = -1, calc_optimizer = -1;
  // Bytes sent per step over each group: TP's all-reduces, CP's attention, the dp·cp gradient
  // synchronisation, the pipeline's activations and gradients, the experts' all-to-all.
  std::int64_t sent_tp = 0, sent_cp = 0, sent_dp_cp = 0, sent_pp = 0, sent_ep = 0;
};

struct LayoutRun {
  Layout5d layout;
  bool moe = false;
  std::vector<double> losses;  // per step, the global mean (the runner's)
  std::vector<double> reference;  // per step, the same training on one device (rank 0's run)
  double median_step_seconds = 0;
  std::vector<std::int64_t> val_steps;  // --eval-every: the steps after which ...
  std::vector<double> val_losses;       // ... the held-out loss was evaluated, and that loss
  std::vector<RankFacts> ranks;  // [world rank], gathered on every rank
  // Every rank's params, grads and optimizer equal to the prediction (ZeRO-1's optimizer: the
  // largest of each replica group's shards).
  bool memory_as_predicted() const;
  double max_relative_loss_gap() const;  // |losses - reference| / reference, the largest
};

// Collective over world, through `runner` (the steps, their times, the losses' mean over its
// metrics communicator, which carries the ranks' rows too: variant_runner.hpp). The reference run
// happens on rank 0 alone, on a communicator of its own.
// With eval_batches > 0, the layout has the runner's validation hook (--eval-every): the held-out
// loss of eval_batches batches of cfg.mbs in the layout (Trainer5d::held_out_loss; the mean over
// the cp ranks of their tokens' losses, in cp order, over a group of metrics), outside the peaks
// and with what it sends taken out of the bytes per group (held_out_traffic.hpp).
LayoutRun run_layout(VariantRunner& runner, Communicator& world, Communicator& metrics, const TrainingConfig& cfg,
                     const Dataset& data, const Layout5d& layout, std::int64_t eval_batches = 0);

}  // namespace usp::ch10
