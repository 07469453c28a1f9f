#include "common/data/text_eval.hpp"

namespace usp {

TextLoss evaluate_text(Model& model, const TextCorpus& text, std::int64_t seq, std::int64_t batch_size) {
  if (seq > model.config().max_seq)
    throw UsageError("seq " + std::to_string(seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(model.config().max_seq));
  if (model.config().vocab < text.vocab())
    throw UsageError("the model's vocab_size " + std::to_string(model.config().vocab) +
                     " is smaller than the byte vocabulary (" + std::to_string(text.vocab()) + ")");
  const Device device = model.params().flat().device();
  SequentialWindows windows(text, seq, batch_size);
  TextLoss out;
  double weighted = 0;  // Σ over batches of (mean loss of the batch) · (windows in it)
  for (Batch b; windows.next(b);) {
    const std::int64_t count = b.inputs.dim(0);
    const double loss = device.is_cpu() ? model.evaluate(b.inputs, b.targets)
                                        : model.evaluate(b.inputs.to(device), b.targets.to(device));
    weighted += loss * static_cast<double>(count);
    out.windows += count;
  }
  out.tokens = out.windows * seq;
  out.mean_loss = weighted / static_cast<double>(out.windows);
  return out;
}

}  // namespace usp
