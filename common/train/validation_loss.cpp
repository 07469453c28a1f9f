#include "common/train/validation_loss.hpp"

#include "common/report/row_gather.hpp"

namespace usp {

double validation_loss(Model& model, const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq) {
  double sum = 0;
  for (std::int64_t b = 0; b < batches; ++b) {
    const Batch batch = data.held_out_batch(b * mbs, mbs, seq);
    sum += model.evaluate(batch.inputs, batch.targets);
  }
  return sum / static_cast<double>(batches);
}

double validation_loss(Communicator& comm, Model& model, const Dataset& data, std::int64_t batches, std::int64_t mbs,
                       std::int64_t seq) {
  return validation_loss(
      comm, [&](const Batch& batch) { return model.evaluate(batch.inputs, batch.targets); }, data, batches, mbs, seq);
}

double validation_loss(Communicator& comm, const std::function<double(const Batch&)>& evaluate, const Dataset& data,
                       std::int64_t batches, std::int64_t mbs, std::int64_t seq) {
  const std::int64_t n = comm.size();
  std::vector<double> mine;  // batches rank, rank + n, ...
  for (std::int64_t b = comm.rank(); b < batches; b += n) mine.push_back(evaluate(data.held_out_batch(b * mbs, mbs, seq)));
  const std::vector<std::vector<double>> all = report::gather_row_lists(comm, mine);
  double sum = 0;
  for (std::int64_t b = 0; b < batches; ++b)
    sum += all[static_cast<std::size_t>(b % n)][static_cast<std::size_t>(b / n)];
  return sum / static_cast<double>(batches);
}

void check_validation_data(const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq) {
  (void)data.held_out_batch(batches * mbs - 1, 1, seq);  // the last sample an evaluation reads
}

void write_validation_json(JsonWriter& j, const std::vector<std::int64_t>& steps, const std::vector<double>& losses) {
  j.key("validation").begin_object().key("steps").array(steps).key("losses").array(losses).end_object();
}

}  // namespace usp
