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
#include <vector>

#include "common/calc/training_setup.hpp"
#include "common/cli.hpp"
#include "common/data/dataset.hpp"
#include "common/comm/communicator.hpp"
#include "common/device.hpp"
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
  Device device = Device::cpu();  // where the parameters, activations and optimizer states live
  // How tensors travel between ranks (TrainingDevices::cpu_or_cuda_ranks; Runtime::make_world).
  CommBackend backend = CommBackend::automatic;

  ModelOptions model_options() const { return {recompute, dtype}; }
  std::int64_t tokens_per_micro_batch() const { return seq * mbs; }
};

struct TrainingDefaults {
  std::string model = "usp-small";
  std::int64_t seq = 128;
  std::int64_t mbs = 8;
  std::int64_t steps = 10;
  double lr = 3e-3;
  // The --recompute modes the chapter supports (chapter 01 measures the layer without
  // recomputation, so it offers only "none").
  std::vector<std::string> recompute_modes = {"none", "selective", "full"};
  std::int64_t layers = 0;  // --layers' default (0: the model's own)
};

void add_training_flags(Cli& cli, const TrainingDefaults& defaults = {});
// A training chapter's command line before its own flags: Cli(program, summary) with the common
// flags (--out defaulting to out/<program less its "ch">: "ch04_data_parallel" writes to
// out/04_data_parallel) and the training flags above.
Cli training_cli(const std::string& program, const TrainingDefaults& defaults, const std::string& summary);
// The mixture-of-experts flags, for the chapters that train one (training_config_from reads them
// when declared): --experts E (0: the dense MLP), --top-k, --capacity-factor (> 0; leave it out,
// or --dropless, for no capacity), --aux-coef (the load-balancing loss's coefficient).
struct MoeDefaults {
  std::int64_t experts = 0;
  std::int64_t top_k = 2;
  double aux_coef = 0.01;
};
void add_moe_flags(Cli& cli, const MoeDefaults& defaults = {});
// Where a chapter's training may run. cpu_only: the chapter refuses --device cuda
// (require_cpu_training). cpu_or_cuda: the model lives on the device --device names — auto is a
// GPU per rank when one is visible (local rank modulo the GPUs), else the CPU; these chapters run
// one rank and no collective on tensors, so --backend must stay auto. cpu_or_cuda_ranks: the same
// devices, and tensors between ranks over --backend: auto, mpi (CPU tensors), nccl or
// host-staged (CUDA tensors); a backend that cannot serve the device is an error.
enum class TrainingDevices { cpu_only, cpu_or_cuda, cpu_or_cuda_ranks };

// Reads the flags back (after parse); UsageError for inconsistent shapes (e.g. heads not
// dividing hidden, seq above the model's max_seq, top-k above the experts, a capacity factor
// <= 0), and for a --device or --backend the chapter cannot honour (see TrainingDevices).
TrainingConfig training_config_from(const Cli& cli, TrainingDevices devices = TrainingDevices::cpu_only,
                                    int local_rank = 0);

// The calculator's view of a training run on one rank (no parallelism yet): its model, seq, mbs,
// recomputation, and fp32 or mixed precision (bf16) from its dtype. Chapters set the layout on it.
calc::TrainingSetup calc_setup(const TrainingConfig& cfg);

// The training chapters that run the model on CPU ranks only: a flag that asks for anything else
// is an error, never silently ignored: --device must be auto or cpu (an unknown device, or cuda
// without a visible GPU, says so), --backend auto or mpi.
void require_cpu_training(const Cli& cli);

// Micro-batches per rank per optimizer step, from --grad-acc and --global-batch (the playbook's
// global batch = mbs × grad-acc × dp). --global-batch G > 0 must be a multiple of mbs × dp and
// sets grad-acc = G / (mbs × dp); given together with --grad-acc, it must equal
// mbs × grad-acc × dp. UsageError otherwise. For the chapters that declare both flags.
std::int64_t resolve_grad_acc(const Cli& cli, std::int64_t mbs, std::int64_t dp);
// The dataset of --data, checked against the model (its vocabulary must fit) and the sequence
// length (a text file must hold seq + 1 bytes); UsageError otherwise.
std::unique_ptr<Dataset> open_training_data(const TrainingConfig& cfg);

}  // namespace usp
