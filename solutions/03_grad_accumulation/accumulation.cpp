// Solution 03.1: gradient accumulation.
#include "chapters/03_grad_accumulation/accumulation.hpp"

#include "common/error.hpp"

namespace usp::ch03 {

double accumulation_step(Model& model, AdamW& optimizer, const std::vector<Batch>& micro_batches) {
  if (micro_batches.empty()) throw UsageError("gradient accumulation needs at least one micro-batch");
  const float scale = 1.0f / static_cast<float>(micro_batches.size());
  ParamStore& params = model.params();
  params.zero_grad();
  double loss_sum = 0;
  for (const Batch& mb : micro_batches) {
    loss_sum += model.forward(mb.inputs, mb.targets);  // this micro-batch's activations appear...
    model.backward(scale);                             // ...and are released; gradients add up
  }
  optimizer.step(params);  // once, on the accumulated gradient
  return loss_sum / static_cast<double>(micro_batches.size());
}

}  // namespace usp::ch03
