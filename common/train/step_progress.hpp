// One line per training step, the same in every chapter that prints its steps:
//
//   step   12  loss 1.3512  dt 284.1 ms  tok/s 921,625 (230,406 per rank)  mfu 45.5%  val_loss 1.7104
//
// dt is the step's wall time; tok/s the step's tokens (every rank's) over dt, and per rank; MFU the
// model FLOPs of the step (forward + backward, StepFlops::model, every rank's) over dt and the
// ranks' peak (matmul_peak.hpp: what this device's matrix products measurably reach); val_loss
// only on the steps that evaluated it (validation_loss.hpp). An MFU above 100 % means the peak was
// measured low (the machine busy while it ran): it is printed with a '*' ("mfu 123.4%*"), and
// print_progress_line explains it under the first such line of the process. The flags that go
// with it:
//   --eval-every N   evaluate the held-out loss every N steps and after the last (0: never)
//   --eval-batches K held-out batches of --mbs samples per evaluation
//   --quiet          no per-step lines (the chapter's tables and summary.json stay)
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "common/cli.hpp"

namespace usp {

struct StepProgress {
  std::int64_t step = 0;
  double loss = 0;
  double seconds = 0;       // the step's wall time
  std::int64_t tokens = 0;  // the step's tokens, all ranks
  int ranks = 1;
  double flops = 0;         // the step's model FLOPs, all ranks
  double peak_flops = 0;    // one rank's peak; 0: no MFU
  double val_loss = NAN;    // NaN: not evaluated this step
};

// The step's MFU in percent; NaN without a peak, FLOPs or a duration (the line shows none).
double mfu_percent(const StepProgress& p);
std::string progress_line(const StepProgress& p);
// Prints prefix + progress_line(p) on stdout; after the first line of this process whose MFU is
// above 100 %, once, the note saying why.
void print_progress_line(const std::string& prefix, const StepProgress& p);
// That note: "  * mfu above 100 %: ..."
extern const char* const kMfuAbovePeakNote;

struct ProgressFlags {
  std::int64_t eval_every = 0;
  std::int64_t eval_batches = 4;
  bool quiet = false;
  // Evaluate after step `step` (0-based) of a run of `steps`: every eval_every-th, and the last.
  bool evaluates(std::int64_t step, std::int64_t steps) const {
    return eval_every > 0 && ((step + 1) % eval_every == 0 || step + 1 == steps);
  }
  // The held-out batches an evaluation takes; 0 when the run evaluates nothing.
  std::int64_t held_out_batches() const { return eval_every > 0 ? eval_batches : 0; }
};

void add_progress_flags(Cli& cli, std::int64_t eval_every_default = 0);
// UsageError for --eval-batches without --eval-every (a flag this run would ignore).
ProgressFlags progress_flags_from(const Cli& cli);
// For an executable that evaluates no held-out loss: --eval-every and --eval-batches are refused
// (Cli::refuse) with `why` and where the held-out loss is, e.g.
//   error: --eval-every: chapter 02 trains nothing (...); chapters 01 and 03-10 evaluate a held-out loss
void refuse_eval_flags(Cli& cli, const std::string& why);

}  // namespace usp
