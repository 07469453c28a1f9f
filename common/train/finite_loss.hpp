// A loss that is not a number is an error, never a result reported as if the run had trained: a
// NaN or an infinity (a diverged run: too large a learning rate, an overflowing fp16 product)
// ends the run with one line naming the step and the quantity, e.g.
//   [rank 0] fatal: step 7 of run 'bf16': the loss is nan: the training diverged (a smaller --lr?)
// write_training_summary checks every training chapter's losses this way before it writes.
// Chapter 14 compares precisions: there a diverged recipe is a result, reported as "diverged at
// step N" (first_non_finite), and never counted as agreeing (loss_agreement.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace usp {

// The first step (from 0) whose value is NaN or infinite; -1 when every one is finite.
std::int64_t first_non_finite(const std::vector<double>& values);

// Throws usp::Error (a fatal failure, exit 1) naming the first non-finite step of `losses` and
// `run` (which run of the chapter, may be empty).
void require_finite_losses(const std::vector<double>& losses, const std::string& run = "");
// The same for one step's value as the run goes (a loop that checks each step stops at the first
// bad one instead of training on); `quantity` names it ("loss", "validation loss"), `where` the
// rank it came from (" on rank 1"; variant_runner.hpp: a mean over ranks, said once).
void require_finite_loss(double value, std::int64_t step, const std::string& quantity = "loss",
                         const std::string& run = "", const std::string& where = "");

}  // namespace usp
