// PpTrainer: training on a dp × pp mesh. The model is cut into p·v virtual stages
// (stage_split.hpp); pipeline rank r holds the stages of its v chunks (the schedule's layout)
// and only their parameters (stage_params.hpp); every step runs the schedule's list with the
// executor (pipeline_executor.hpp) over this replica's m micro-batches, then averages each held
// gradient over the dp replicas and takes one AdamW step per unit. Each micro-batch's backward
// starts from 1/m of its loss, so a replica's gradient is that of its mean loss, exactly as the
// single-device run with m micro-batches of gradient accumulation computes it.
// Mesh order "tp-cp-dp-pp": the pipeline dimension is the slowest, so a replica's stages are
// the ranks dp·tp·cp apart and the dp peers of a stage are neighbours.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chapters/08_pipeline_parallel/pipeline_executor.hpp"
#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/stage_params.hpp"
#include "chapters/08_pipeline_parallel/stage_split.hpp"
#include "chapters/08_pipeline_parallel/weight_grad_queue.hpp"
#include "common/mesh.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch08 {

struct PpLayout {
  int dp = 1, pp = 1;
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  int m = 1;  // micro-batches per replica and step
  int v = 1;  // chunks per rank (interleaved)

  int world() const { return dp * pp; }
  std::string label() const;  // "1f1b PP 2, m = 4", "interleaved PP 2 × v 2 × DP 2, m = 4"
};

// UsageError (the same on every rank) when the layout cannot run: dp·pp not the world size,
// fewer layers than p·v stages or tied embeddings (split_units' reasons). A schedule that cannot
// take (p, m, v) is make_schedule's to refuse (the trainer's constructor calls it).
void check_pp_layout(const PpLayout& layout, int world_size, const ModelConfig& model);

// What one step did on this rank.
struct PpStep {
  double loss = 0;  // the replica's mean loss over its micro-batches (the same on every rank of the replica)
  ExecutedStep executed;
};

class PpTrainer {
 public:
  // Collective over world (builds the mesh).
  PpTrainer(Communicator& world, const TrainingConfig& cfg, PpLayout layout);
  ~PpTrainer();
  PpTrainer(const PpTrainer&) = delete;
  PpTrainer& operator=(const PpTrainer&) = delete;

  // One optimizer step over this replica's m micro-batches (every rank of the replica passes the
  // same ones).
  PpStep step(const std::vector<Batch>& micro_batches);
  // The held-out loss of the trained state (validation_loss.hpp) in the pipeline layout: replica
  // d evaluates the held-out batches d, d + dp, ..., each flowing forward-only through its
  // stages (PipelineExecutor::evaluate); the last stage's per-batch losses are gathered over
  // `replicas` (this pipeline rank's peers in every replica, in dp order: a communicator whose
  // counters the chapter does not report) and summed in batch order, and the mean reaches every
  // rank of the replica as the step's loss does. Collective over world; what it sends over pp is
  // the caller's to keep out of the training's bytes (held_out_traffic.hpp).
  double held_out_loss(Communicator& replicas, const Dataset& data, std::int64_t batches, std::int64_t mbs,
                       std::int64_t seq);

  const PpLayout& layout() const { return layout_; }
  const Schedule& schedule() const { return schedule_; }
  const std::vector<UnitRange>& stages() const { return stages_; }  // [p·v]: every virtual stage's units
  Communicator& pp() { return mesh_->pp(); }
  Communicator& dp() { return mesh_->dp(); }
  StageParams& params() { return *params_; }
  Model& chunk(int c) { return *chunks_[static_cast<std::size_t>(c)]; }

 private:
  PpLayout layout_;
  Schedule schedule_;
  std::vector<UnitRange> stages_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<StageParams> params_;
  WeightGradQueue queue_;
  std::vector<std::unique_ptr<Model>> chunks_;
  std::unique_ptr<PipelineExecutor> executor_;
  Device cfg_device_ = Device::cpu();       // where the stages' tensors live
  int last_rank_ = 0;                        // the pipeline rank of the last stage (the loss)
  std::unique_ptr<Communicator> loss_comm_;  // the pipeline's ranks, for the loss only
};

}  // namespace usp::ch08
