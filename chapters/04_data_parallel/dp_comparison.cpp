#include "chapters/04_data_parallel/dp_comparison.hpp"

#include "common/trace.hpp"

namespace usp::ch04 {

VariantRun run_variant(const DpConfig& cfg, Communicator& comm, Communicator& host, const Dataset& data,
                       std::int64_t steps, const std::string& trace_dir) {
  MemoryTracker& tracker = MemoryTracker::instance();
  tracker.reset_peak();
  Tracer& tracer = Tracer::instance();
  tracer.enable(false);
  tracer.clear();

  VariantRun run;
  run.mode = cfg.mode;
  std::vector<double> local_losses;
  double timed_seconds = 0;
  {
    DataParallelTrainer trainer(cfg, comm);
    run.expected_collectives = trainer.sync().collectives_per_step();
    // The first step warms up (MPI connections, first-touch pages, the optimizer's states): it
    // is neither timed nor traced unless it is the only one.
    const std::int64_t first_timed = steps > 1 ? 1 : 0;
    for (std::int64_t s = 0; s < steps; ++s) {
      if (s == first_timed) {
        tracer.align(host);  // every rank's clock starts at the same barrier
        tracer.enable(true);
      }
      const DpStepStats st = trainer.step(data, s);
      local_losses.push_back(st.loss);
      for (std::size_t j = 0; j + 1 < st.collectives_during.size(); ++j)
        if (st.collectives_during[j] != 0) run.quiet_micro_batches = false;
      run.collectives_per_step = st.collectives_during.back() + st.collectives_after;
      run.bytes_per_step = st.bytes_sent;
      if (s >= first_timed) timed_seconds += st.seconds;
    }
    tracer.enable(false);
    run.timed_steps = steps - first_timed;
    run.peak = tracker.peak();
    run.peak_total = tracker.peak_total();
  }

  const CommOverlap mine = comm_overlap(tracer.spans());
  run.losses = mean_over_ranks(host, local_losses);
  const double n = host.size();
  const std::vector<double> sums = mean_over_ranks(
      host, {timed_seconds / static_cast<double>(run.timed_steps), run.quiet_micro_batches ? 1.0 : 0.0, mine.comm_us,
             mine.hidden_us, static_cast<double>(mine.comm_spans), static_cast<double>(mine.overlapping_spans),
             mine.backward_us});
  run.step_seconds = sums[0];
  run.quiet_micro_batches = sums[1] == 1.0;
  run.overlap.comm_us = sums[2] * n;
  run.overlap.hidden_us = sums[3] * n;
  run.overlap.comm_spans = static_cast<int>(sums[4] * n + 0.5);
  run.overlap.overlapping_spans = static_cast<int>(sums[5] * n + 0.5);
  run.overlap.backward_us = sums[6] * n;
  if (!trace_dir.empty()) write_trace(host, trace_dir, std::string("trace_") + dp_mode_name(cfg.mode));
  tracer.clear();
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
