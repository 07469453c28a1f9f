// Running and measuring one ZeRO configuration (see stage_run.hpp).
#include "chapters/05_zero/stage_run.hpp"

#include <algorithm>

#include "common/model/model.hpp"
#include "common/train/validation_loss.hpp"
#include "common/train/variant_numbers.hpp"

namespace usp::ch05 {

std::string stage_label(const ZeroOptions& o) {
  if (o.stage == 0) return "DP";
  std::string s = "ZeRO-" + std::to_string(o.stage);
  if (o.stage == 3 && !o.prefetch) s += " (no prefetch)";
  return s;
}

namespace {

// The held-out loss of the trained state: a replica of the full parameters (f32, flat order) on
// every rank of metrics, its batches split over them (collective over metrics).
double replica_validation_loss(Communicator& metrics, const TrainingConfig& cfg, const std::vector<float>& full,
                               const Dataset& data, std::int64_t batches) {
  ParamStore replica(cfg.model, cfg.dtype, cfg.device, false);
  replica.flat().copy_from(Tensor::from_floats(full, {replica.numel()}, cfg.dtype));
  Model model(replica, cfg.model_options());
  return validation_loss(metrics, model, data, batches, cfg.mbs, cfg.seq);
}

}  // namespace

StageResult run_stage(VariantRunner& runner, Communicator& dp, Communicator& metrics, const TrainingConfig& cfg,
                      const Dataset& data, std::int64_t grad_acc, const ZeroOptions& options,
                      const std::string& trace_name, std::int64_t eval_batches) {
  MemoryTracker& tracker = MemoryTracker::instance();
  StageResult r;
  r.options = options;
  r.formula = zero_state_bytes(cfg.model, cfg.dtype, options.stage, dp.size(), dp.rank(), options.fp32_grad_accum);
  metrics.barrier();
  tracker.reset_peak();
  dp.reset_stats();
  ZeroTrainer trainer(dp, cfg, options);
  TrainingVariant steps{.name = stage_label(options), .trace_name = trace_name};
  steps.step = [&](std::int64_t step) {
    return trainer.step(rank_micro_batches(data, step, dp.rank(), grad_acc, cfg.mbs, cfg.seq));
  };
  steps.traced_step = [&](const std::vector<Span>& spans) {
    r.gather_hidden = hidden_fraction(spans, {"all_gather"});
    r.reduce_hidden = hidden_fraction(spans, {"reduce_scatter"});
    double first = 0, last = 0;
    for (const Span& x : spans) {
      first = std::min(first, x.start_us);
      last = std::max(last, x.end_us);
    }
    r.traced_step_ms = (last - first) / 1e3;
  };
  steps.after_steps = [&] {
    r.comm = dp.stats();
    const RankMemory settled = settled_memory({&dp});
    r.resident = settled.resident;
    r.peak = settled.peak;
    r.max_units_held = trainer.max_units_held();
  };
  if (eval_batches > 0)
    steps.validation = [&](std::int64_t) {
      const MemoryTracker::Unmeasured off_the_books;  // the peaks are the steps'
      return replica_validation_loss(metrics, cfg, trainer.full_parameters(metrics), data, eval_batches);
    };
  const VariantRun run = runner.run(steps);
  r.losses = run.losses;
  r.val_steps = run.val_steps;
  r.val_losses = run.val_losses;
  r.seconds = run.seconds;
  r.parameters = trainer.full_parameters(metrics);
  return r;
}

}  // namespace usp::ch05
