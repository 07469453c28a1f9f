#include "chapters/08_pipeline_parallel/pp_run.hpp"

#include <algorithm>
#include <chrono>

#include "chapters/08_pipeline_parallel/pipeline_measure.hpp"
#include "common/trace.hpp"
#include "common/report/median.hpp"
#include "common/report/row_gather.hpp"

namespace usp::ch08 {

double ScheduleRun::median_step_seconds() const { return report::median(step_seconds); }

ScheduleRun train_schedule(Communicator& world, Communicator& metrics, const TrainingConfig& cfg, const Dataset& data,
                         const PpLayout& layout, const std::string& trace_dir) {
  MemoryTracker& tracker = MemoryTracker::instance();
  tracker.reset_peak();
  ScheduleRun run;
  run.layout = layout;
  PpTrainer trainer(world, cfg, layout);
  run.schedule = trainer.schedule();
  run.stages = trainer.stages();
  run.pp_rank = trainer.pp().rank();
  run.params_held = trainer.params().numel();
  Tracer& tracer = Tracer::instance();
  MemCounts peak;  // the executor restarts the tracker's peaks each step: keep the largest
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const bool traced = !trace_dir.empty() && step + 1 == cfg.steps;
    if (traced) {
      tracer.clear();
      tracer.align(metrics);
      tracer.enable(true);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const PpStep s = trainer.step(rank_micro_batches(data, step, trainer.dp().rank(), layout.m, cfg.mbs, cfg.seq));
    run.step_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const MemCounts now = tracker.peak();
    for (int c = 0; c < kNumMemCategories; ++c) peak.bytes[c] = std::max(peak.bytes[c], now.bytes[c]);
    if (traced) tracer.enable(false);
    // Every rank of a replica holds its loss; replicas hold equal token counts: the mean over all
    // ranks is the global mean, taken in double as sent.
    double sum = 0;
    const std::vector<double> all = report::gather_rows(metrics, s.loss);
    for (double loss : all) sum += loss;
    run.losses.push_back(sum / static_cast<double>(all.size()));
    if (step + 1 == cfg.steps) {
      run.pp_comm = trainer.pp().stats();  // the training's traffic, before the gather below adds to it
      run.dp_comm = trainer.dp().stats();
      run.last_step = gather_executed(trainer.pp(), s.executed);
    }
  }
  if (!trace_dir.empty()) write_trace(metrics, trace_dir, "trace_" + std::string(schedule_kind_name(layout.schedule)));
  run.peak = peak;
  return run;
}

}  // namespace usp::ch08
