// Running and measuring one TP (+SP) layout (see tp_run.hpp).
#include "chapters/06_tensor_parallel/tp_run.hpp"

#include <algorithm>
#include <chrono>

#include "common/model/unit_spans.hpp"
#include "common/report/median.hpp"
#include "common/trace.hpp"

namespace usp::ch06 {

std::string variant_name(const TpLayout& layout) {
  return "tp" + std::to_string(layout.tp) + (layout.sp ? "_sp" : "");
}

double VariantResult::median_step_seconds() const { return report::median(step_seconds); }

VariantResult run_variant(Communicator& world, Communicator& metrics, const TrainingConfig& cfg, const Dataset& data,
                          const Variant& variant, const std::string& trace_dir, const TrainerHooks& hooks) {
  MemoryTracker& tracker = MemoryTracker::instance();
  Tracer& tracer = Tracer::instance();
  VariantResult r;
  r.variant = variant;
  r.layer_formula = layer_activation_formula(cfg, variant.layout);
  metrics.barrier();
  {
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
    for (std::int64_t step = 0; step < cfg.steps; ++step) {
      // Every tp rank of a replica takes the replica's micro-batches: its dp coordinate's share.
      const std::vector<Batch> micro =
          rank_micro_batches(data, step, r.dp_rank, variant.micro_batches, cfg.mbs, cfg.seq);
      const bool traced = !variant.trace_name.empty() && step == cfg.steps - 1;
      if (traced) {
        tracer.clear();
        tracer.align(metrics);
        tracer.enable(true);
      }
      const auto t0 = std::chrono::steady_clock::now();
      const double local = trainer.step(micro);
      r.step_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (traced) tracer.enable(false);
      // Every replica's tp ranks hold its loss: the mean over the world's ranks is the global one.
      Tensor loss = Tensor::from_floats({static_cast<float>(local)}, {1});
      metrics.all_reduce(loss, ReduceOp::avg);
      r.losses.push_back(static_cast<double>(loss.to_floats()[0]));
    }
    r.tp_comm = trainer.tp().stats();
    r.dp_comm = trainer.dp().stats();
    r.layer_saved = trainer.model().measured_saved_bytes()[1];
    // A collective's buffers are let go by the communicator's progress thread just after the op
    // completes; an op queued behind them (these barriers) completes only once they are gone, so
    // the tracker now shows exactly the state the trainer keeps.
    trainer.tp().barrier();
    trainer.dp().barrier();
    r.resident = tracker.current();
    r.peak = tracker.peak();
    r.peak_total = tracker.peak_total();
    if (hooks.after_training) hooks.after_training(trainer);
    if (!variant.trace_name.empty()) write_trace(metrics, trace_dir, variant.trace_name);
    r.parameters = trainer.full_parameters();
  }
  return r;
}

}  // namespace usp::ch06
