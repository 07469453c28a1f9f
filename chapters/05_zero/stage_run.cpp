// Running and measuring one ZeRO configuration (see stage_run.hpp).
#include "chapters/05_zero/stage_run.hpp"

#include <algorithm>
#include <chrono>

#include "common/device.hpp"

namespace usp::ch05 {

std::string stage_label(const ZeroOptions& o) {
  if (o.stage == 0) return "DP";
  std::string s = "ZeRO-" + std::to_string(o.stage);
  if (o.stage == 3 && !o.prefetch) s += " (no prefetch)";
  return s;
}

StageResult run_stage(Communicator& dp, Communicator& metrics, const TrainingConfig& cfg, const Dataset& data,
                      std::int64_t grad_acc, const ZeroOptions& options, const std::string& trace_dir,
                      const std::string& trace_name) {
  MemoryTracker& tracker = MemoryTracker::instance();
  Tracer& tracer = Tracer::instance();
  StageResult r;
  r.options = options;
  r.formula = zero_state_bytes(cfg.model, cfg.dtype, options.stage, dp.size(), dp.rank(), options.fp32_grad_accum);
  metrics.barrier();
  tracker.reset_peak();
  dp.reset_stats();
  {
    ZeroTrainer trainer(dp, cfg, options);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t step = 0; step < cfg.steps; ++step) {
      const std::vector<Batch> micro = rank_micro_batches(data, step, dp.rank(), grad_acc, cfg.mbs, cfg.seq);
      const bool traced = !trace_name.empty() && step == cfg.steps - 1;
      if (traced) {
        tracer.clear();
        tracer.align(metrics);
        tracer.enable(true);
      }
      const double local = trainer.step(micro);
      if (traced) {
        tracer.enable(false);
        const std::vector<Span> spans = tracer.spans();
        r.gather_hidden = hidden_fraction(spans, {"all_gather"});
        r.reduce_hidden = hidden_fraction(spans, {"reduce_scatter"});
        double first = 0, last = 0;
        for (const Span& x : spans) {
          first = std::min(first, x.start_us);
          last = std::max(last, x.end_us);
        }
        r.traced_step_ms = (last - first) / 1e3;
      }
      Tensor loss = Tensor::from_floats({static_cast<float>(local)}, {1});
      metrics.all_reduce(loss, ReduceOp::avg);
      r.losses.push_back(static_cast<double>(loss.to_floats()[0]));
    }
    synchronize(cfg.device);  // a GPU's queued work belongs to the measured time
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.comm = dp.stats();
    // A collective's buffers are let go by the communicator's progress thread just after the op
    // completes; an op queued behind them (this barrier) completes only once they are gone, so
    // the tracker now shows exactly the state the trainer keeps.
    dp.barrier();
    r.resident = tracker.current();
    r.peak = tracker.peak();
    r.max_units_held = trainer.max_units_held();
    if (!trace_name.empty()) write_trace(metrics, trace_dir, trace_name);
    r.parameters = trainer.full_parameters(metrics);
  }
  return r;
}

}  // namespace usp::ch05
