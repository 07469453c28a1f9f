// StageParams: the parameters one pipeline rank holds — the units of its chunks' virtual stages
// and nothing else. A ParamStore with per-unit buffers (params.hpp) where only those units are
// materialized: a rank holds about Ψ/p parameters, gradients and optimizer states instead of Ψ.
// Each unit is initialised as its slice of the whole model (the seed and the parameters'
// global element indices), so the pipeline starts from the single-device model's weights, and
// has its own AdamW over the unit's range of the flat parameter vector.
// Chapter 10 composes it with the other parallelisms: a TpShard / EpShard makes the units hold
// this rank's slice of each split weight or its experts (initialised as that slice), and without
// an optimizer (with_optimizer = false) a ZeRO-1 optimizer elsewhere owns the states.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "chapters/08_pipeline_parallel/stage_split.hpp"
#include "common/comm/communicator.hpp"
#include "common/model/params.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch08 {

class StageParams {
 public:
  // ranges: the units of this rank's chunks (any order; they must not overlap).
  StageParams(const TrainingConfig& cfg, const std::vector<UnitRange>& ranges, TpShard tp = {}, EpShard ep = {},
              bool with_optimizer = true);
  ~StageParams();
  StageParams(const StageParams&) = delete;
  StageParams& operator=(const StageParams&) = delete;

  ParamStore& store() { return *store_; }
  const std::vector<int>& units() const { return units_; }  // ascending

  void zero_grad() { store_->zero_grad(); }
  // The mean of every held gradient over a data-parallel group (each replica's gradient is that of
  // the mean loss over its own micro-batches; the global batch's is their mean).
  void average_grads(Communicator& dp);
  void step();  // one AdamW step of every held unit (Error without an optimizer)
  std::int64_t numel() const;  // parameters held

 private:
  std::unique_ptr<ParamStore> store_;
  std::vector<int> units_;
  std::vector<std::unique_ptr<AdamW>> optimizers_;  // [units_.size()]
};

}  // namespace usp::ch08
