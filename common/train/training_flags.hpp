// The flags every training chapter shares, and the configuration they describe:
//   --model NAME (built-in shape; see ModelConfig::builtin_names) with optional overrides
//   --layers --hidden --heads --kv-heads --ffn (0 keeps the model's value), --tied,
//   --seq (tokens per sample), --mbs (micro-batch size, samples), --data synthetic|text:FILE,
//   --precision fp32|bf16 (parameters, gradients and activations; bf16 keeps fp32 master
//   weights in the optimizer), --lr --weight-decay, --recompute none|selective|full.
// Chapters add their own flags next to these; --seed, --steps and --out come from Cli.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "common/cli.hpp"
#include "common/data/dataset.hpp"
#include "common/model/config.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"

namespace usp {

struct TrainingConfig {
  ModelConfig model;
  std::int64_t seq = 128;
  std::int64_t mbs = 8;
  std::string data = "synthetic";
  DType dtype = DType::f32;
  Recompute recompute = Recompute::none;
  AdamWConfig adamw;
  std::uint64_t seed = 1234;
  std::int64_t steps = 1;

  ModelOptions model_options() const { return {recompute, dtype}; }
  std::int64_t tokens_per_micro_batch() const { return seq * mbs; }
};

struct TrainingDefaults {
  std::string model = "usp-small";
  std::int64_t seq = 128;
  std::int64_t mbs = 8;
  std::int64_t steps = 10;
  double lr = 3e-3;
};

void add_training_flags(Cli& cli, const TrainingDefaults& defaults = {});
// Reads the flags back (after parse); UsageError for inconsistent shapes (e.g. heads not
// dividing hidden, seq above the model's max_seq).
TrainingConfig training_config_from(const Cli& cli);
// The dataset of --data, checked against the model (its vocabulary must fit) and the sequence
// length (a text file must hold seq + 1 bytes); UsageError otherwise.
std::unique_ptr<Dataset> open_training_data(const TrainingConfig& cfg);

}  // namespace usp
