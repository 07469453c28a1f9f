#include "common/train/validation_loss.hpp"

namespace usp {

double validation_loss(Model& model, const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq) {
  double sum = 0;
  for (std::int64_t b = 0; b < batches; ++b) {
    const Batch batch = data.held_out_batch(b * mbs, mbs, seq);
    sum += model.evaluate(batch.inputs, batch.targets);
  }
  return sum / static_cast<double>(batches);
}

void check_validation_data(const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq) {
  (void)data.held_out_batch(batches * mbs - 1, 1, seq);  // the last sample an evaluation reads
}

}  // namespace usp
