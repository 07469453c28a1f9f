#include "chapters/08_pipeline_parallel/pp_run.hpp"

#include <algorithm>

#include "chapters/08_pipeline_parallel/pipeline_measure.hpp"
#include "common/report/median.hpp"

namespace usp::ch08 {

double ScheduleRun::median_step_seconds() const { return report::median(step_seconds); }

ScheduleRun train_schedule(VariantRunner& runner, Communicator& world, const TrainingConfig& cfg, const Dataset& data,
                           const PpLayout& layout) {
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
  steps.after_steps = [&] {
    run.pp_comm = trainer.pp().stats();  // the training's traffic, before the gather below adds to it
    run.dp_comm = trainer.dp().stats();
    run.last_step = gather_executed(trainer.pp(), last.executed);
  };
  const VariantRun done = runner.run(steps);
  run.losses = done.losses;
  run.step_seconds = done.step_seconds;
  return run;
}

}  // namespace usp::ch08
