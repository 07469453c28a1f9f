// Trainer5d: one trainer for every layout — DP × TP × PP × CP (× EP) on one mesh, built from the
// pieces the earlier chapters made, each doing at its place in the model what it did alone:
//
//   PP (chapter 08)  the model cut into p·v virtual stages; this rank runs its chunks' stages with
//                    the pipeline executor and the schedule's list over the pp group, holding only
//                    its stages' units (StageParams);
//   TP (chapter 06)  inside each stage the layers are Megatron blocks over the tp group; the units
//                    hold this rank's TpShard; what crosses a stage boundary is the replicated
//                    residual stream, each TP rank sending its copy to its peer of the next stage;
//   CP (chapter 07)  each sequence of a micro-batch split over the cp group (zig-zag or contiguous),
//                    the attention of every layer over the whole sequence (ring, all-gather or
//                    all-to-all); a stage boundary carries a rank's tokens only;
//   EP (chapter 09)  a mixture of experts' experts spread over ep of the dp ranks (all-to-all of
//                    token rows in every MoE layer);
//   DP (chapter 04)  replicas take their own micro-batches; the gradients are averaged over the
//                    dp·cp ranks of a (tp, pp) coordinate by chapter 04's bucketed sync, launched as
//                    the chunks' last backward passes make them final (StageGradSync, exercises
//                    04.1 and 04.2), or by chapter 05's ZeRO-1 step (exercise 05.1) in StageOptimizer.
//
// Every rank of replica d (its dp coordinate) is given the same m micro-batches of mbs whole
// sequences (the data rule's samples d·m·mbs ..); a CP rank keeps its tokens of each. Each
// micro-batch's backward starts from 1/m of its loss, so the step's gradient is that of the global
// batch, as the single-device run with dp·m micro-batches computes it.
#pragma once
#include <memory>
#include <vector>

#include "chapters/06_tensor_parallel/megatron_tp.hpp"
#include "chapters/07_context_parallel/cp_attention.hpp"
#include "chapters/08_pipeline_parallel/pipeline_executor.hpp"
#include "chapters/08_pipeline_parallel/stage_params.hpp"
#include "chapters/08_pipeline_parallel/stage_split.hpp"
#include "chapters/08_pipeline_parallel/weight_grad_queue.hpp"
#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "chapters/10_5d_parallelism/layout_5d.hpp"
#include "chapters/10_5d_parallelism/stage_optimizer.hpp"
#include "common/mesh.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch10 {

struct Step5d {
  double loss = 0;  // the mean cross-entropy over this rank's tokens of its replica's micro-batches
  ch08::ExecutedStep executed;
};

class Trainer5d {
 public:
  // Collective over world (builds the mesh). UsageError from check_layout_5d.
  Trainer5d(Communicator& world, const TrainingConfig& cfg, Layout5d layout);
  ~Trainer5d();
  Trainer5d(const Trainer5d&) = delete;
  Trainer5d& operator=(const Trainer5d&) = delete;

  // One optimizer step over this replica's m micro-batches of whole sequences.
  Step5d step(const std::vector<Batch>& micro_batches);
  // The held-out loss of the trained state (validation_loss.hpp) in this layout: replica d
  // evaluates the held-out batches d, d + dp, ... of whole sequences, each rank its tokens of
  // each, forward-only through the stages (ch08::PipelineExecutor::evaluate, the TP, CP and EP
  // collectives inside them as in training); the last stage's per-batch losses are gathered over
  // `replicas` (this rank's peers of the same (tp, cp, pp) coordinate in every replica, in dp
  // order: a communicator whose counters the chapter does not report) and summed in batch order,
  // and the mean reaches every rank of the pipeline as the step's loss does: the mean over this
  // rank's tokens (the caller averages the cp ranks'). Collective over world; what it sends over
  // the mesh's groups is the caller's to keep out of the training's bytes (held_out_traffic.hpp).
  double held_out_loss(Communicator& replicas, const Dataset& data, std::int64_t batches, std::int64_t mbs,
                       std::int64_t seq);

  const Layout5d& layout() const { return layout_; }
  Mesh& mesh() { return *mesh_; }
  ch08::StageParams& params() { return *params_; }
  const StageOptimizer& optimizer() const { return *optimizer_; }
  int stage() const { return mesh_->coord(MeshDim::pp); }  // this rank's pipeline rank

 private:
  Layout5d layout_;
  ch08::Schedule schedule_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<ch06::MegatronTp> tp_;                // tp > 1
  std::unique_ptr<ch07::CpAttentionBase> attention_;    // cp > 1
  std::unique_ptr<ch09::AllToAllExperts> experts_;      // ep > 1
  std::vector<std::int32_t> positions_;                 // this rank's token positions (cp > 1)
  std::unique_ptr<ch08::StageParams> params_;
  std::unique_ptr<StageOptimizer> optimizer_;
  ch08::WeightGradQueue queue_;
  std::vector<std::unique_ptr<Model>> chunks_;
  std::unique_ptr<ch08::PipelineExecutor> executor_;
  int last_rank_ = 0;                        // the pipeline rank of the last stage (the loss)
  std::unique_ptr<Communicator> loss_comm_;  // the pipeline's ranks, for the loss only
};

}  // namespace usp::ch10
