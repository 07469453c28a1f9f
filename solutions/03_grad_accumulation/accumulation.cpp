// Exercise 03.1, the reference solution: gradient accumulation.
#include "chapters/03_grad_accumulation/accumulation.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch03 {

namespace {

// The first token id of t outside [0, vocab), or -1 when there is none.
std::int64_t first_outside(const Tensor& t, std::int64_t vocab) {
  const Tensor host = t.to(Device::cpu());
  const std::int32_t* id = host.data<std::int32_t>();
  for (std::int64_t j = 0; j < host.numel(); ++j)
    if (id[j] < 0 || id[j] >= vocab) return j;
  return -1;
}

// The tokens of every micro-batch, checked before anything changes: the model would refuse a bad
// micro-batch itself, but only in its forward, after the earlier ones had added their gradients.
std::vector<std::int64_t> checked_tokens(const ModelConfig& c, const std::vector<Batch>& micro_batches) {
  if (micro_batches.empty()) throw UsageError("gradient accumulation needs at least one micro-batch");
  std::vector<std::int64_t> tokens;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    const Batch& mb = micro_batches[i];
    const std::string which = "accumulation_step: micro-batch " + std::to_string(i);
    if (mb.inputs.shape() != mb.targets.shape())
      throw Error(which + " has inputs " + shape_str(mb.inputs.shape()) + " and targets " +
                  shape_str(mb.targets.shape()));
    if (mb.inputs.numel() == 0) throw Error(which + " holds no token");
    if (mb.inputs.dim(-1) > c.max_seq)
      throw Error(which + " is " + std::to_string(mb.inputs.dim(-1)) + " tokens long, the model's max_seq is " +
                  std::to_string(c.max_seq));
    for (const Tensor* t : {&mb.inputs, &mb.targets})
      if (const std::int64_t j = first_outside(*t, c.vocab); j >= 0)
        throw Error(which + " holds token " + std::to_string(t->to(Device::cpu()).data<std::int32_t>()[j]) +
                    " outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
    tokens.push_back(mb.inputs.numel());
  }
  return tokens;
}

}  // namespace

double accumulation_step(Model& model, AdamW& optimizer, const std::vector<Batch>& micro_batches) {
  const std::vector<std::int64_t> tokens = checked_tokens(model.config(), micro_batches);
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
