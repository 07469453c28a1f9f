// Solution 03.1: gradient accumulation.
#include "chapters/03_grad_accumulation/accumulation.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch03 {

namespace {

// The tokens of every micro-batch, checked before anything changes.
std::vector<std::int64_t> checked_tokens(const std::vector<Batch>& micro_batches) {
  if (micro_batches.empty()) throw UsageError("gradient accumulation needs at least one micro-batch");
  std::vector<std::int64_t> tokens;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    const Batch& mb = micro_batches[i];
    if (mb.inputs.shape() != mb.targets.shape())
      throw Error("accumulation_step: micro-batch " + std::to_string(i) + " has inputs " +
                  shape_str(mb.inputs.shape()) + " and targets " + shape_str(mb.targets.shape()));
    if (mb.inputs.numel() == 0) throw Error("accumulation_step: micro-batch " + std::to_string(i) + " holds no token");
    tokens.push_back(mb.inputs.numel());
  }
  return tokens;
}

}  // namespace

double accumulation_step(Model& model, AdamW& optimizer, const std::vector<Batch>& micro_batches) {
  const std::vector<std::int64_t> tokens = checked_tokens(micro_batches);
  std::int64_t total = 0;
  for (const std::int64_t n : tokens) total += n;

  // The big batch's loss is the mean over all N tokens: micro-batch i's mean counts with weight
  // n_i / N (1/k when they are all alike), and so does its gradient.
  ParamStore& params = model.params();
  params.zero_grad();  // backward adds: whatever the buffer held would be added too
  double loss = 0;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    const Batch& mb = micro_batches[i];
    const double weight = static_cast<double>(tokens[i]) / static_cast<double>(total);
    loss += weight * model.forward(mb.inputs, mb.targets);  // this micro-batch's activations appear...
    model.backward(static_cast<float>(weight));             // ...and are released; gradients add up
  }
  optimizer.step(params);  // once, on the accumulated gradient
  return loss;
}

}  // namespace usp::ch03
