// Running and measuring one TP (+SP) layout (see tp_run.hpp).
#include "chapters/06_tensor_parallel/tp_run.hpp"

#include "common/model/unit_spans.hpp"
#include "common/report/median.hpp"
#include "common/train/held_out_traffic.hpp"
#include "common/train/validation_loss.hpp"

namespace usp::ch06 {

std::string variant_name(const TpLayout& layout) {
  return "tp" + std::to_string(layout.tp) + (layout.sp ? "_sp" : "");
}

double VariantResult::median_step_seconds() const { return report::median(step_seconds); }

VariantResult run_variant(VariantRunner& runner, Communicator& world, const TrainingConfig& cfg, const Dataset& data,
                          const Variant& variant, const TrainerHooks& hooks, std::int64_t eval_batches) {
  MemoryTracker& tracker = MemoryTracker::instance();
  VariantResult r;
  r.variant = variant;
  r.layer_formula = layer_activation_formula(cfg, variant.layout);
  TpTrainer trainer(world, cfg, variant.layout);
  r.tp_rank = trainer.tp().rank();
  r.dp_rank = trainer.dp().rank();
  r.counted = count_comm(cfg, variant.layout, variant.micro_batches, r.tp_rank, r.dp_rank);
  if (hooks.before_training) hooks.before_training(trainer);
  // The peaks from here on: the trainer's state, and what its steps add (not what building it
  // or loading a checkpoint held for a moment).
  tracker.reset_peak();
  // Compute spans per model unit for the trace; the communicators add their own "comm" spans.
  ModelHooks unit_hooks;
  trace_units(unit_hooks, static_cast<int>(cfg.model.layers));
  trainer.model().set_hooks(unit_hooks);
  trainer.tp().reset_stats();  // building the mesh's groups is not training traffic
  trainer.dp().reset_stats();
  TrainingVariant steps{.name = variant.layout.label(), .trace_name = variant.trace_name};
  // Every tp rank of a replica takes the replica's micro-batches (its dp coordinate's share) and
  // holds its loss: the mean over the world's ranks is the global one.
  steps.step = [&](std::int64_t step) {
    return trainer.step(rank_micro_batches(data, step, r.dp_rank, variant.micro_batches, cfg.mbs, cfg.seq));
  };
  // The held-out loss: the replicas' ranks of one tp rank (a group of metrics: it counts nothing
  // the chapter reports) split the batches; the evaluations' tp collectives are set aside.
  Communicator& metrics = runner.metrics();
  const std::unique_ptr<Communicator> replicas = eval_batches > 0 ? metrics.split(r.tp_rank, r.dp_rank) : nullptr;
  HeldOutTraffic held_out(trainer.tp());
  if (eval_batches > 0)
    steps.validation = [&](std::int64_t) {
      const MemoryTracker::Unmeasured off_the_books;  // the peaks are the steps'
      return held_out.count(
          [&] { return validation_loss(*replicas, trainer.model(), data, eval_batches, cfg.mbs, cfg.seq); });
    };
  steps.after_steps = [&] {
    r.tp_comm = held_out.training_stats();
    r.dp_comm = trainer.dp().stats();
    r.layer_saved = trainer.model().measured_saved_bytes()[1];
    r.memory = settled_memory({&trainer.tp(), &trainer.dp()});
    if (hooks.after_training) hooks.after_training(trainer);
  };
  const VariantRun run = runner.run(steps);
  r.losses = run.losses;
  r.step_seconds = run.step_seconds;
  r.val_steps = run.val_steps;
  r.val_losses = run.val_losses;
  r.parameters = trainer.full_parameters();
  return r;
}

}  // namespace usp::ch06
