#include "chapters/08_pipeline_parallel/pp_run.hpp"

#include <algorithm>

#include "chapters/08_pipeline_parallel/pipeline_measure.hpp"
#include "common/report/median.hpp"
#include "common/train/held_out_traffic.hpp"

namespace usp::ch08 {

double ScheduleRun::median_step_seconds() const { return report::median(step_seconds); }

ScheduleRun train_schedule(VariantRunner& runner, Communicator& world, const TrainingConfig& cfg, const Dataset& data,
                           const PpLayout& layout, std::int64_t eval_batches) {
  MemoryTracker& tracker = MemoryTracker::instance();
  tracker.reset_peak();
  ScheduleRun run;
  run.layout = layout;
  PpTrainer trainer(world, cfg, layout);
  run.schedule = trainer.schedule();
  run.stages = trainer.stages();
  run.pp_rank = trainer.pp().rank();
  run.params_held = trainer.params().numel();
  const std::string name = schedule_kind_name(layout.schedule);
  TrainingVariant steps{.name = name, .trace_name = "trace_" + name};
  // Every rank of a replica holds its loss; replicas hold equal token counts: the mean over all
  // ranks is the global mean.
  PpStep last;
  steps.step = [&](std::int64_t step) {
    last = trainer.step(rank_micro_batches(data, step, trainer.dp().rank(), layout.m, cfg.mbs, cfg.seq));
    const MemCounts now = tracker.peak();  // the executor restarts the tracker's peaks each step: keep the largest
    for (int c = 0; c < kNumMemCategories; ++c) run.peak.bytes[c] = std::max(run.peak.bytes[c], now.bytes[c]);
    return last.loss;
  };
  // The held-out loss: this pipeline rank's peers in the replicas (a group of metrics, which the
  // chapter does not report) split the batches; the evaluations' activations over pp are set aside.
  const std::unique_ptr<Communicator> replicas =
      eval_batches > 0 ? runner.metrics().split(trainer.pp().rank(), trainer.dp().rank()) : nullptr;
  HeldOutTraffic held_out(trainer.pp());
  if (eval_batches > 0)
    steps.validation = [&](std::int64_t) {
      const MemoryTracker::Unmeasured off_the_books;  // the peaks are the steps'
      return held_out.count([&] { return trainer.held_out_loss(*replicas, data, eval_batches, cfg.mbs, cfg.seq); });
    };
  steps.after_steps = [&] {
    run.pp_comm = held_out.training_stats();  // the training's traffic, before the gather below adds to it
    run.dp_comm = trainer.dp().stats();
    run.last_step = gather_executed(trainer.pp(), last.executed);
  };
  const VariantRun done = runner.run(steps);
  run.losses = done.losses;
  run.step_seconds = done.step_seconds;
  run.val_steps = done.val_steps;
  run.val_losses = done.val_losses;
  return run;
}

}  // namespace usp::ch08
