// One expert-parallel variant (ep, and the load-balancing loss on or off) trained for a few steps
// on the run's ranks and measured: the global losses, the tokens each expert received per step
// (over all ranks: routed by the router, kept within the capacity), the drops, this rank's
// all-to-all bytes per step, the parameters it holds, its peak memory by category, step times.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/09_expert_parallel/ep_trainer.hpp"
#include "common/memory_tracker.hpp"
#include "common/train/variant_runner.hpp"

namespace usp::ch09 {

struct EpVariant {
  EpLayout layout;
  bool aux = true;                 // the load-balancing loss in the objective
  std::int64_t micro_batches = 1;  // per rank and step

  std::string label() const;  // "EP 2, aux loss on"
  std::string name() const;   // "ep2_aux": for file names
};

struct EpResult {
  EpVariant variant;
  std::vector<double> losses;     // per step: the mean cross-entropy over every rank's tokens (the runner's)
  std::vector<double> aux;        // per step: the load-balancing loss (mean over the ranks)
  // [step][layer · E + expert]: assignments over all ranks (the router's, and those computed).
  std::vector<std::vector<std::int64_t>> routed, kept;
  std::vector<std::int64_t> dropped;          // per step, over all ranks and layers
  std::vector<std::int64_t> a2a_bytes;        // [world rank]: all-to-all(-v) bytes sent per step
  std::vector<std::int64_t> params_held;      // [world rank]: parameters (elements)
  std::vector<std::int64_t> peak_total;       // [world rank]: tracker peak of the total
  std::vector<double> step_seconds;           // this rank's (the runner's; rank 0's is reported)
  std::vector<float> final_params;            // this rank's store, for comparisons
  std::vector<std::int64_t> val_steps;        // --eval-every: the steps after which ...
  std::vector<double> val_losses;             // ... the held-out loss was evaluated, and that loss

  double median_step_seconds() const;
  // max over experts / mean over experts of a step's kept assignments (1 = perfectly balanced),
  // the mean over layers.
  double imbalance(std::size_t step, std::int64_t experts) const;
  // The same, averaged over the last `steps` steps (one step's routing is noisy).
  double late_imbalance(std::int64_t experts, std::size_t steps = 5) const;
  // The first step whose loss differs from `other`'s by more than `rel` (relative), or -1.
  int first_divergence(const EpResult& other, double rel) const;
};

// Collective over world, through `runner` (the steps, their times, the losses' mean over its
// metrics communicator: variant_runner.hpp); metrics (the runner's) carries the routing and the
// ranks' rows too. save_dir not empty: the trained model is saved there as one checkpoint
// (ep_checkpoint.hpp).
// With eval_batches > 0 (a multiple of dp: check_ep_eval_batches), the variant has the runner's
// validation hook (--eval-every): the held-out loss in the layout itself, rank r evaluating batches
// r, r + dp, ... (validation_loss.hpp, over metrics) through its model, whose tokens travel to the
// experts' ranks and back at every MoE layer as in training. Those all-to-alls are taken out of
// a2a_bytes (held_out_traffic.hpp), the evaluation's memory out of the peaks.
EpResult run_ep_variant(VariantRunner& runner, Communicator& world, Communicator& metrics, TrainingConfig cfg,
                        const Dataset& data, const EpVariant& variant, const std::string& save_dir = "",
                        std::int64_t eval_batches = 0);
// UsageError unless the dp ranks divide eval_batches: the ranks of an expert-parallel group meet in
// an all-to-all at every MoE layer of every forward, so each must evaluate as many batches.
void check_ep_eval_batches(std::int64_t eval_batches, int dp);

}  // namespace usp::ch09
