#include "chapters/04_data_parallel/dp_comparison.hpp"

#include "common/train/validation_loss.hpp"

namespace usp::ch04 {

DpVariant run_variant(VariantRunner& runner, const DpConfig& cfg, Communicator& comm, const Dataset& data,
                      std::int64_t eval_batches) {
  Communicator& metrics = runner.metrics();
  MemoryTracker& tracker = MemoryTracker::instance();
  tracker.reset_peak();
  const std::int64_t steps = cfg.train.steps;
  // The first step warms up (MPI connections, first-touch pages, the optimizer's states): it
  // is neither timed nor traced unless it is the only one.
  const std::int64_t first_timed = steps > 1 ? 1 : 0;

  DpVariant run;
  run.mode = cfg.mode;
  CommOverlap mine;
  VariantRun steps_run;
  {
    DataParallelTrainer trainer(cfg, comm);
    run.expected_collectives = trainer.sync().collectives_per_step();
    TrainingVariant v{.name = dp_mode_name(cfg.mode), .trace_name = std::string("trace_") + dp_mode_name(cfg.mode)};
    v.traced_steps = steps - first_timed;
    v.step = [&](std::int64_t s) {
      const DpStepStats st = trainer.step(data, s);
      for (std::size_t j = 0; j + 1 < st.collectives_during.size(); ++j)
        if (st.collectives_during[j] != 0) run.quiet_micro_batches = false;
      run.collectives_per_step = st.collectives_during.back() + st.collectives_after;
      run.bytes_per_step = st.bytes_sent;
      return st.loss;
    };
    v.traced_step = [&](const std::vector<Span>& spans) { mine = comm_overlap(spans); };
    v.validation = [&](std::int64_t) {
      const MemoryTracker::Unmeasured off_the_books;  // the peaks are the steps'
      return validation_loss(metrics, trainer.model(), data, eval_batches, cfg.train.mbs, cfg.train.seq);
    };
    v.after_steps = [&] {
      run.peak = tracker.peak();
      run.peak_total = tracker.peak_total();
    };
    steps_run = runner.run(v);
  }

  run.losses = steps_run.losses;
  run.val_steps = steps_run.val_steps;
  run.val_losses = steps_run.val_losses;
  run.timed_steps = steps - first_timed;
  double timed_seconds = 0;
  for (std::int64_t s = first_timed; s < steps; ++s)
    timed_seconds += steps_run.step_seconds[static_cast<std::size_t>(s)];
  const double n = metrics.size();
  const std::vector<double> sums = mean_over_ranks(
      metrics, {timed_seconds / static_cast<double>(run.timed_steps), run.quiet_micro_batches ? 1.0 : 0.0, mine.comm_us,
                mine.hidden_us, static_cast<double>(mine.comm_spans), static_cast<double>(mine.overlapping_spans),
                mine.backward_us});
  run.step_seconds = sums[0];
  run.quiet_micro_batches = sums[1] == 1.0;
  run.overlap.comm_us = sums[2] * n;
  run.overlap.hidden_us = sums[3] * n;
  run.overlap.comm_spans = static_cast<int>(sums[4] * n + 0.5);
  run.overlap.overlapping_spans = static_cast<int>(sums[5] * n + 0.5);
  run.overlap.backward_us = sums[6] * n;
  Tracer::instance().clear();
  return run;
}

std::vector<double> run_baseline(const TrainingConfig& cfg, const Dataset& data, std::int64_t global_batch,
                                 std::int64_t steps) {
  ParamStore params(cfg.model, cfg.dtype, cfg.device);
  params.init(cfg.seed);
  Model model(params, cfg.model_options());
  AdamW optimizer(params, cfg.adamw);
  std::vector<double> losses;
  for (std::int64_t s = 0; s < steps; ++s) {
    const Batch batch = data.batch(s, 0, global_batch, cfg.seq);
    params.zero_grad();
    losses.push_back(model.forward(batch.inputs, batch.targets));
    model.backward();
    optimizer.step(params);
  }
  return losses;
}

}  // namespace usp::ch04
