// CpTrainer: training on a dp × cp mesh. Each of the dp replicas splits every sequence of its
// micro-batches over cp ranks (cp_layout.hpp: contiguous or zig-zag chunks), runs the model on its
// tokens with a context-parallel attention (cp_attention.hpp), and the gradients are averaged
// over all dp·cp ranks: a rank's loss is the mean over its tokens, the global loss the mean of the
// ranks' (they all hold the same number of tokens), so the global gradient is the mean of theirs.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "chapters/07_context_parallel/cp_attention.hpp"
#include "common/data/dataset.hpp"
#include "common/mesh.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch07 {

struct CpLayout {
  int dp = 1;
  int cp = 1;
  CpSharding sharding = CpSharding::zigzag;
  CpAttention attention = CpAttention::ring;

  int world() const { return dp * cp; }
  std::string label() const;  // "CP 4 ring zig-zag", "DP 2 × CP 2 all-gather contiguous"
};

// UsageError (the same on every rank) when the layout cannot run: dp·cp not the world size, seq
// not a multiple of cp (contiguous) or 2·cp (zig-zag), or (all-to-all) cp not dividing the heads
// and the kv heads.
void check_cp_layout(const CpLayout& layout, int world_size, const ModelConfig& model, std::int64_t seq);

// This rank's tokens of a batch: inputs and targets [B, T] -> [B, T / cp] at `positions`.
Batch local_tokens(const Batch& batch, const std::vector<std::int32_t>& positions);

class CpTrainer {
 public:
  // Collective over world (builds the mesh: cp innermost, "cp-..." order).
  CpTrainer(Communicator& world, const TrainingConfig& cfg, CpLayout layout);
  ~CpTrainer();
  CpTrainer(const CpTrainer&) = delete;
  CpTrainer& operator=(const CpTrainer&) = delete;

  // One optimizer step on this replica's micro-batches (whole sequences: the trainer takes this
  // rank's tokens of each). Returns the mean loss over this rank's tokens.
  double step(const std::vector<Batch>& micro_batches);

  const CpLayout& layout() const { return layout_; }
  Communicator& cp() { return mesh_->cp(); }
  Communicator& dp() { return mesh_->dp(); }
  Communicator& dp_cp() { return mesh_->dp_cp(); }
  ParamStore& params() { return *store_; }
  Model& model() { return *model_; }
  CpAttentionBase& attention() { return *attention_; }
  const std::vector<std::int32_t>& positions() const { return positions_; }

 private:
  CpLayout layout_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<CpAttentionBase> attention_;
  std::unique_ptr<ParamStore> store_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::vector<std::int32_t> positions_;
};

}  // namespace usp::ch07
