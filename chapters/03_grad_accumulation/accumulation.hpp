// Exercise 03.1: gradient accumulation — k micro-batches, one optimizer step.
//
// A batch too big for memory is split into k micro-batches of b samples. Each one runs forward
// and backward on its own (so only one micro-batch's activations are alive at a time), the
// gradients add up in the parameter store's gradient buffer, and the optimizer steps once.
// For the update to equal the one-big-batch update, each micro-batch's loss is scaled by 1/k:
// the big batch's loss is the mean over k·b samples, i.e. the mean of the k micro-batch means.
#pragma once
#include <vector>

#include "common/data/dataset.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"

namespace usp::ch03 {

// One optimizer step over the micro-batches (all of the same shape): clear the gradients, run
// forward and backward on each micro-batch with the loss scaled by 1/k, step once.
// Returns the mean of the micro-batches' losses (= the big batch's loss).
double accumulation_step(Model& model, AdamW& optimizer, const std::vector<Batch>& micro_batches);

}  // namespace usp::ch03
