// The loss on data the model never trains on (Dataset::held_out_batch: a text's last tenth, the
// synthetic corpus's reserved step): the mean of `batches` batches of mbs samples, each through
// Model::evaluate (no activations kept, no gradients). The same held-out samples every time, so
// successive evaluations of one run are comparable. A training loss that keeps falling while this
// one rises is the model memorising its training text.
#pragma once
#include <cstdint>

#include "common/data/dataset.hpp"
#include "common/model/model.hpp"

namespace usp {

double validation_loss(Model& model, const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq);
// Before training: UsageError if the held-out data has fewer than batches · mbs samples of seq + 1
// tokens (a short text), so a run does not fail at its first evaluation.
void check_validation_data(const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq);

}  // namespace usp
