// Exercise 03.1: gradient accumulation — k micro-batches, one optimizer step.
//
// A batch too big for memory is split into k micro-batches. Each one runs forward and backward on
// its own (so only one micro-batch's activations are alive at a time), and the optimizer steps
// once, on a gradient that must be the big batch's. The model's loss on a batch is the mean over
// its tokens (Model::forward), and Model::backward(scale) ADDS scale × the gradient of that mean
// to the store's gradient buffer. What to scale by, and why, is the exercise (the chapter's
// README, "The loop", asks the questions).
#pragma once
#include <vector>

#include "common/data/dataset.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"

namespace usp::ch03 {

// One optimizer step over the micro-batches, which may differ in size: micro-batch i is
// inputs/targets [count_i, seq_i] (i32), with count_i·seq_i = n_i tokens, N = Σ n_i.
// Postconditions, whatever the store's gradients held on entry:
//   - the optimizer stepped exactly once, with the store's gradient equal (to fp32 rounding) to
//     the gradient of the big batch's loss, the mean over all N tokens;
//   - the store's gradient buffer holds that gradient after the step;
//   - returns that loss, Σ n_i·loss_i / N, where loss_i is micro-batch i's mean (Model::forward):
//     k micro-batches of one shape give the mean of their losses;
//   - the activations of at most one micro-batch are alive at any time.
// Errors, thrown before anything changes (the gradients and the optimizer untouched, even when
// the bad micro-batch is the last one), each a usp::Error whose message starts with exactly:
//   "gradient accumulation needs at least one micro-batch"           (a usp::UsageError)
//   "accumulation_step: micro-batch <i> has inputs <shape> and targets <shape>"  (they differ,
//                                                      shapes as usp::shape_str writes: "[2, 24]")
//   "accumulation_step: micro-batch <i> holds no token"
//   "accumulation_step: micro-batch <i> is <seq_i> tokens long, the model's max_seq is <m>"
//   "accumulation_step: micro-batch <i> holds token <t> outside the vocabulary [0, <v>)"  (the
//                                                      first such, inputs before targets, in order)
double accumulation_step(Model& model, AdamW& optimizer, const std::vector<Batch>& micro_batches);

}  // namespace usp::ch03
