// ZeroTrainer: data-parallel training with a ZeRO stage, over one data-parallel group of N_d
// ranks. Every stage computes the same step as one rank on the whole global batch
// (docs/ARCHITECTURE.md, principle 1); they differ in what a rank keeps (k = Adam's bytes per
// parameter: 8 in fp32, 12 with bf16 parameters and fp32 master weights; b = bytes per
// parameter/gradient element):
//
//   stage   parameters      gradients         optimizer   communication per step
//   0 (DP)  b·Ψ             b·Ψ               k·Ψ         all-reduce the gradients (2Ψ)
//   1       b·Ψ             b·Ψ               k·Ψ/N_d     reduce-scatter (Ψ) + all-gather params (Ψ)
//   2       b·Ψ             b·Ψ/N_d           k·Ψ/N_d     reduce-scatter per unit (Ψ) + all-gather (Ψ)
//   3       b·Ψ/N_d         b·Ψ/N_d           k·Ψ/N_d     all-gather per unit in forward (Ψ) and
//                                                         backward (Ψ) + reduce-scatter (Ψ)
//
// (Ψ/N_d is the shard: ceil, per flat buffer for stage 1 and per unit for stages 2-3, see
// shard_layout.hpp.) Stage 0 is plain data parallelism, here for comparison (chapter 04 shows it
// in full). Stage 1's step is exercise 05.1. Stages 2 and 3 act inside backward (and forward)
// through the model's hooks, following the per-unit plan of unit_schedule.hpp: a unit's
// gradient is reduce-scattered (asynchronously, overlapping the next unit's backward) and freed
// as soon as that unit's backward is done; under stage 3 a unit's parameters are all-gathered
// before it runs (the next unit's gather prefetched while it computes) and freed after.
//
// With k micro-batches per step, each is scaled by 1/k and the ranks' gradients are averaged:
// the mean over all N_d·k micro-batches. Stages 0 and 1 accumulate full gradients locally and
// communicate once per step; stages 2 and 3 keep no full gradient, so they reduce-scatter after
// every micro-batch (and stage 3 gathers the parameters for every micro-batch's forward and
// backward). With fp32_grad_accum (bf16 parameters only) the gradients add up in an fp32 buffer
// (stages 0-1: a full one, reduced in fp32; stages 2-3: one per shard, fed by each micro-batch's
// bf16 reduce-scatter): 2 + 4 bytes of gradient per parameter.
//
// The state lives on cfg.device: on a GPU, dp is a communicator for CUDA tensors (NCCL, or MPI
// through host memory).
//
// Tracing (when the Tracer is on): each unit's forward and backward as a "compute" span, and
// each ZeRO-2/3 collective's window, from launch to the wait for it, as a "comm window" span
// ("all_gather unit 3"); the communicator adds when each op really ran ("comm").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/data/dataset.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/training_flags.hpp"
#include "chapters/05_zero/shard_layout.hpp"
#include "chapters/05_zero/unit_schedule.hpp"

namespace usp::ch05 {

struct ZeroOptions {
  int stage = 1;                 // 0 (plain DP) .. 3
  bool prefetch = true;          // stage 3: gather the next unit while the current one computes
  bool fp32_grad_accum = false;  // bf16 parameters only
};

class ZeroTrainer {
 public:
  // Builds the rank's share of the model, initialised from cfg.seed (each shard by itself:
  // under stage 3 the full model never exists). UsageError for a stage outside 0..3 or
  // fp32_grad_accum without bf16.
  ZeroTrainer(Communicator& dp, const TrainingConfig& cfg, ZeroOptions options);
  ~ZeroTrainer();
  ZeroTrainer(const ZeroTrainer&) = delete;
  ZeroTrainer& operator=(const ZeroTrainer&) = delete;

  // One optimizer step on this rank's micro-batches (same shape; collective over dp). Returns
  // the mean of their losses (this rank's share of the global loss).
  double step(const std::vector<Batch>& micro_batches);

  // Collective over comm, a communicator of the same ranks in the same order over CPU tensors
  // (e.g. a split of the world, so that dp's byte counters keep only the training traffic; on
  // GPUs the shards are copied to the host first); f32, flat layout order.
  std::vector<float> full_parameters(Communicator& comm);
  // The gradient the last step's optimizer used: averaged over the ranks (and micro-batches).
  std::vector<float> averaged_gradient(Communicator& comm);

  const ZeroOptions& options() const { return options_; }
  const ParamStore& params() const { return *store_; }
  const std::vector<UnitStep>& plan() const { return plan_; }
  // Stage 3, measured: the most units whose full parameters were materialized at once.
  int max_units_held() const { return max_units_held_; }

 private:
  struct UnitShard;         // stages 2-3: one unit's shard, gradient shard and optimizer
  struct PendingReduction;  // stages 2-3: a unit gradient's reduce-scatter in flight

  void setup_flat(const TrainingConfig& cfg);
  void setup_units(const TrainingConfig& cfg);
  void before_unit(bool backward, int unit);
  void after_unit(bool backward, int unit);
  void launch_reduction(int unit);
  void finish_reductions();
  void optimizer_step();
  void trace_window(const std::string& name, double issued_us);

  Communicator& dp_;
  ZeroOptions options_;
  int ranks_ = 1, rank_ = 0;
  DType dtype_ = DType::f32;
  std::unique_ptr<ParamStore> store_;
  std::unique_ptr<Model> model_;
  std::vector<UnitStep> plan_;
  std::size_t cursor_ = 0;    // the plan step the model is in
  std::int64_t micro_ = 0;    // the micro-batch being run
  double span_start_us_ = 0;  // trace: when the current unit's compute started
  int max_units_held_ = 0;

  // Stages 0-1: one optimizer over the flat range; stage 1's reduced gradient shard; the fp32
  // accumulation buffer (laid out like the padded gradient).
  std::unique_ptr<AdamW> flat_optimizer_;
  Tensor reduced_, flat_accum_;
  // Stages 2-3.
  std::vector<UnitShard> units_;
  std::vector<WorkHandle> gathers_;       // [unit]: a pending all-gather of its parameters
  std::vector<double> gather_issued_us_;  // [unit]: when it was launched (trace)
  std::vector<PendingReduction> reductions_;
};

}  // namespace usp::ch05
