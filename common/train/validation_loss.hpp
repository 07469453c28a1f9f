// The loss on data the model never trains on (Dataset::held_out_batch: a text's last tenth, the
// synthetic corpus's reserved step): the mean of `batches` batches of mbs samples, each through
// Model::evaluate (no activations kept, no gradients). The same held-out samples every time, so
// successive evaluations of one run are comparable. A training loss that keeps falling while this
// one rises is the model memorising its training text.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/data/dataset.hpp"
#include "common/json.hpp"
#include "common/model/model.hpp"

namespace usp {

double validation_loss(Model& model, const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq);
// The same loss when every rank of comm holds the same model (data parallelism's replicas): rank r
// evaluates batches r, r + N, r + 2N, ... of the N ranks, the per-batch losses are gathered over
// comm and summed in batch order, so every rank returns the single-rank value's exact bits at
// 1/N of its compute. Collective over comm (it sends only the losses: give it a communicator
// whose counters the chapter does not report).
double validation_loss(Communicator& comm, Model& model, const Dataset& data, std::int64_t batches, std::int64_t mbs,
                       std::int64_t seq);
// The same split over comm for a model that is not a Model::evaluate call on the whole batch (a
// context-parallel rank evaluates its tokens of it): `evaluate` gives this rank's loss of one
// held-out batch.
double validation_loss(Communicator& comm, const std::function<double(const Batch&)>& evaluate, const Dataset& data,
                       std::int64_t batches, std::int64_t mbs, std::int64_t seq);
// Before training: UsageError if the held-out data has fewer than batches · mbs samples of seq + 1
// tokens (a short text), so a run does not fail at its first evaluation.
void check_validation_data(const Dataset& data, std::int64_t batches, std::int64_t mbs, std::int64_t seq);

// summary.json's results.validation, the same key in every chapter that evaluates:
//   "validation": {"steps": [4, 9], "losses": [2.31, 2.05]}   (empty arrays without --eval-every)
void write_validation_json(JsonWriter& j, const std::vector<std::int64_t>& steps, const std::vector<double>& losses);

}  // namespace usp
