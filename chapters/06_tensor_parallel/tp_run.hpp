// One TP (+SP) layout trained for a few steps on the run's ranks and measured: the losses, this
// rank's memory by category and one layer's saved activations (next to the course's formula),
// the bytes it sent per collective on its tensor- and data-parallel groups (next to the operator
// count), the step times, and the final parameters (to compare layouts with each other).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chapters/06_tensor_parallel/tp_formulas.hpp"
#include "chapters/06_tensor_parallel/tp_trainer.hpp"
#include "common/data/dataset.hpp"
#include "common/memory_tracker.hpp"
#include "common/train/variant_numbers.hpp"
#include "common/train/variant_runner.hpp"

namespace usp::ch06 {

struct Variant {
  TpLayout layout;
  std::int64_t micro_batches = 1;  // per replica and step: the global batch / (dp · mbs)
  std::string trace_name;          // "trace_tp2_sp": the last step's trace, <out>/<name>.{json,csv}
};

// "tp2_sp", "tp4", "tp1": the variant's name in file names.
std::string variant_name(const TpLayout& layout);

struct VariantResult {
  Variant variant;
  int tp_rank = 0, dp_rank = 0;
  std::vector<double> losses;      // the global mean loss per step (the runner's)
  RankMemory memory;               // this rank's after the last step; the peaks from the trainer built (and loaded)
  std::int64_t layer_saved = 0;    // the tracker's Activation growth while layer 0 ran forward
  std::int64_t layer_formula = 0;  // layer_activation_formula
  CommStats tp_comm, dp_comm;      // this rank, all steps
  CommCount counted;               // per step
  std::vector<double> step_seconds;  // this rank's (the runner's)
  std::vector<float> parameters;   // the final parameters, unsharded (the same on every rank)
  std::vector<std::int64_t> val_steps;  // --eval-every: the steps after which ...
  std::vector<double> val_losses;       // ... the held-out loss was evaluated, and that loss

  double median_step_seconds() const;
};

// What the chapter does to a trainer around its steps (loading or saving a checkpoint); either
// may be empty. Called on every rank.
struct TrainerHooks {
  std::function<void(TpTrainer&)> before_training, after_training;
};

// Trains cfg.steps steps of the variant on world's ranks through `runner` (the steps, their
// times, the traced last step, the losses' mean over its metrics communicator: variant_runner.hpp),
// so that the trainer's groups count exactly what the layout communicates.
// With eval_batches > 0, the variant has the runner's validation hook (--eval-every): the held-out
// loss in the layout itself, each replica's tp ranks running the split model's forward on the same
// held-out batches (Model::evaluate) and the replicas taking batches dp_rank, dp_rank + dp, ...
// (validation_loss.hpp, over a group of the metrics communicator). Its tensor-parallel collectives
// are taken out of tp_comm (held_out_traffic.hpp) and its memory out of the peaks.
VariantResult run_variant(VariantRunner& runner, Communicator& world, const TrainingConfig& cfg, const Dataset& data,
                          const Variant& variant, const TrainerHooks& hooks = {}, std::int64_t eval_batches = 0);

}  // namespace usp::ch06
