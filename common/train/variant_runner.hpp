// The parallel chapters (04-10) train one step sequence under several variants side by side (DP
// modes, ZeRO stages, TP degrees, CP attentions, pipeline schedules, EP layouts, 5D layouts) and
// compare them.
// This is their one step loop. A chapter gives a variant as a name and a step function (plus,
// optionally, what to read off the traced step and what to measure once the steps are done); the
// runner does, on every rank of `metrics` (a communicator of the training's ranks that carries no
// training traffic, so the trainers' groups count exactly what the variants send):
//
//   for step = 0 .. steps-1:
//     a traced step (the last variant.traced_steps steps of a traced variant): at the first, the
//            tracer is cleared and aligned over metrics; before each, enabled
//     local = variant.step(step)          this rank's loss; the call's wall time is step_seconds
//     traced: the tracer is disabled; after the last traced step, variant.traced_step(its spans)
//     variant.after_step(step)            untimed: what the chapter gathers about the step
//     loss = the mean over metrics' ranks of every rank's local loss, gathered as doubles and
//            summed in rank order (the same bits on every rank)
//     not finite: a fatal error (usp::Error) on every rank, the same line naming the step, the
//            variant, the first rank whose own loss is not finite, and the quantity: said once
//            ("fatal: step 8 of run 'TP 2': the loss is nan on rank 0: ... (on every rank)")
//     a variant with a validation hook, on the steps progress.evaluates (--eval-every): val_loss =
//            variant.validation(step), untimed and untraced; not finite: the same fatal error
//     rank 0, unless --quiet: "  <name>: " and the progress line of step_progress.hpp (the loss,
//            rank 0's step time, tokens/s total and per rank, the MFU of the step's model FLOPs
//            (calc/flops_model.hpp) against the ranks' matmul_peak.hpp, measured once by every
//            rank at the same time (the mean), and the val_loss of the steps that evaluated it)
//   the device is synchronised (queued GPU work belongs to the measured time): seconds
//   variant.after_steps()                 the chapter's measurements of the trained state
//   traced: the trace is written to <trace_dir>/<trace_name>.{json,csv} (over metrics)
//
// Every variant the runner ran is kept for the comparison with the first (the baseline):
// agreement() is loss_agreement.hpp's compare_losses (a NaN or an infinity never agrees).
//
// What a chapter's step does is its own: which micro-batches a rank takes (the data rule), the
// trainer's step, what it records per step (attention times, routing, memory peaks). The runner
// holds no trainer: a variant's step function captures it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/train/loss_agreement.hpp"
#include "common/train/step_progress.hpp"
#include "common/train/training_flags.hpp"
#include "common/trace.hpp"

namespace usp {

struct TrainingVariant {
  std::string name = {};                           // in messages: "tp2_sp", "ZeRO-3"
  std::function<double(std::int64_t step)> step = {};  // one optimizer step; returns this rank's loss
  std::string trace_name = {};                     // non-empty: trace the last step
  std::function<void(const std::vector<Span>&)> traced_step = {};  // optional: the traced step's spans
  std::function<void(std::int64_t step)> after_step = {};          // optional, collective like a step
  std::function<void()> after_steps = {};          // optional: measured before the trace is written
  std::int64_t traced_steps = 1;                   // with trace_name: how many of the last steps (1..steps)
  // Optional, collective over metrics: the held-out loss of the trained state after `step`, the
  // same on every rank (validation_loss.hpp's, split over the ranks for a replicated model). Runs
  // outside the step's timing and trace; what it allocates or sends is the chapter's to keep out
  // of its own measurements (chapter 04: its peaks exclude it, it sends over metrics only).
  std::function<double(std::int64_t step)> validation = {};
};

struct VariantRun {
  std::string name;
  std::vector<double> losses;        // per step: the mean over the ranks (the same on every rank)
  std::vector<double> step_seconds;  // per step: this rank's wall time of variant.step
  std::vector<std::int64_t> val_steps;  // the steps after which the held-out loss was evaluated
  std::vector<double> val_losses;       // ... and that loss
  double seconds = 0;                // this rank's wall time of the whole loop, device synchronised
  double median_step_seconds() const;
};

struct RunnerSettings {
  TrainingConfig config = {};         // steps, device, and the shape behind the MFU's FLOPs
  std::int64_t tokens_per_step = 0;   // the global batch's tokens (every rank's)
  ProgressFlags progress = {};        // --quiet, --eval-every, --eval-batches (progress_flags_from),
                                      // the last two for variants with a validation hook
  std::string trace_dir = {};         // where traced variants are written (the chapter's --out)
};

class VariantRunner {
 public:
  VariantRunner(Communicator& metrics, RunnerSettings settings);

  // Collective over metrics. Throws usp::Error (fatal) on a non-finite loss, as above.
  VariantRun run(const TrainingVariant& variant);

  const std::vector<VariantRun>& runs() const { return runs_; }
  Communicator& metrics() { return metrics_; }
  // Every run's losses against the first run's (the baseline), for the config's dtype.
  LossAgreement agreement() const;

 private:
  Communicator& metrics_;
  RunnerSettings settings_;
  double flops_per_step_ = 0;  // model FLOPs of one step, every rank's
  double peak_flops_ = 0;      // one rank's (the mean over the ranks); 0 when quiet (not measured)
  std::vector<VariantRun> runs_;
};

}  // namespace usp
