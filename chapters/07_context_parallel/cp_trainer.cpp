#include "chapters/07_context_parallel/cp_trainer.hpp"

#include "common/device.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch07 {

std::string CpLayout::label() const {
  const std::string s = std::string(attention_name(attention)) + " " + sharding_name(sharding);
  std::string mesh = "CP " + std::to_string(cp);
  if (tp > 1) mesh += " × TP " + std::to_string(tp);
  return (dp > 1 ? "DP " + std::to_string(dp) + " × " + mesh : mesh) + " " + s;
}

void check_cp_layout(const CpLayout& layout, int world_size, const ModelConfig& model, std::int64_t seq) {
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  if (layout.dp < 1 || layout.cp < 1 || layout.tp < 1)
    throw UsageError("--dp, --cp and --tp must be >= 1 (got dp " + str(layout.dp) + ", cp " + str(layout.cp) +
                     ", tp " + str(layout.tp) + ")");
  if (layout.world() != world_size)
    throw UsageError("the mesh dp " + str(layout.dp) + " × cp " + str(layout.cp) +
                     (layout.tp > 1 ? " × tp " + str(layout.tp) : std::string()) + " = " + str(layout.world()) +
                     " ranks does not match the " + str(world_size) + " ranks of this run");
  check_tp_shard(model, TpShard{layout.tp, 0});  // chapter 06's split: t divides heads, kv heads, ffn, vocab
  const int cp = layout.cp;
  if (layout.sharding == CpSharding::zigzag && seq % (2 * cp) != 0)
    throw UsageError("zig-zag context parallelism cuts each sequence into 2·cp chunks: seq " + str(seq) +
                     " is not divisible by 2·cp = " + str(2 * cp));
  if (layout.sharding == CpSharding::contiguous && seq % cp != 0)
    throw UsageError("contiguous context parallelism cuts each sequence into cp chunks: seq " + str(seq) +
                     " is not divisible by cp = " + str(cp));
  const std::int64_t heads = model.heads / layout.tp, kv_heads = model.kv_heads / layout.tp;
  if (layout.attention == CpAttention::all_to_all && (heads % cp != 0 || kv_heads % cp != 0))
    throw UsageError("the all-to-all attention gives each of the cp = " + str(cp) +
                     " ranks a share of the heads: cp must divide the number of heads (" + str(heads) +
                     (layout.tp > 1 ? " per TP rank" : "") + ") and of kv heads (" + str(kv_heads) + ")");
}

Batch local_tokens(const Batch& batch, const std::vector<std::int32_t>& positions) {
  const std::int64_t B = batch.inputs.dim(0), T = batch.inputs.dim(1);
  const std::int64_t n = static_cast<std::int64_t>(positions.size());
  Batch out{Tensor::empty({B, n}, DType::i32), Tensor::empty({B, n}, DType::i32)};
  for (auto [from, to] : {std::pair{&batch.inputs, &out.inputs}, std::pair{&batch.targets, &out.targets}}) {
    const std::int32_t* src = from->data<std::int32_t>();
    std::int32_t* dst = to->data<std::int32_t>();
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < n; ++j) dst[b * n + j] = src[b * T + positions[static_cast<std::size_t>(j)]];
  }
  return out;
}

CpTrainer::CpTrainer(Communicator& world, const TrainingConfig& cfg, CpLayout layout) : layout_(layout) {
  check_cp_layout(layout_, world.size(), cfg.model, cfg.seq);
  USP_CHECK(world.device() == cfg.device,
            "CpTrainer: the model lives on " + cfg.device.str() + " but the world's tensors on " + world.device().str() +
                " (a GPU needs a device communicator: Runtime::make_world)");
  mesh_ = std::make_unique<Mesh>(
      world, MeshLayout(world.size(), MeshSizes{.dp = layout_.dp, .tp = layout_.tp, .cp = layout_.cp}));
  attention_ = make_cp_attention(layout_.attention, mesh_->cp(), layout_.sharding, cfg.model.heads / layout_.tp,
                                 cfg.model.kv_heads / layout_.tp);
  // Every rank holds the whole model, or with tp its TpShard (context parallelism splits the
  // tokens, not the weights), initialised from the seed as one device would.
  StoreLayout store_layout;
  store_layout.tp = TpShard{layout_.tp, mesh_->tp().rank()};
  store_ = std::make_unique<ParamStore>(cfg.model, cfg.dtype, cfg.device, store_layout);
  store_->init(cfg.seed);
  ModelOptions options = cfg.model_options();
  options.attention = attention_.get();
  if (layout_.tp > 1) {
    tp_ = std::make_unique<ch06::MegatronTp>(mesh_->tp(), /*sequence_parallel=*/false, cfg.model.vocab);
    options.linears = tp_.get();
  }
  model_ = std::make_unique<Model>(*store_, options);
  optimizer_ = std::make_unique<AdamW>(*store_, cfg.adamw);
  positions_ = rank_positions(layout_.sharding, cfg.seq, layout_.cp, mesh_->cp().rank());
}

CpTrainer::~CpTrainer() = default;

double CpTrainer::step(const std::vector<Batch>& micro_batches) {
  const float scale = 1.0f / static_cast<float>(micro_batches.size());
  store_->zero_grad();
  attention_->reset_work();  // the step's attention: its compute time over every micro-batch
  double loss = 0.0;
  for (const Batch& b : micro_batches) {
    const Batch mine = local_tokens(b, positions_);
    loss += model_->forward(mine.inputs, mine.targets);
    model_->backward(scale);
  }
  // Each rank's gradient is that of the mean loss over its tokens; every rank of the dp × cp
  // mesh holds as many, so the global gradient is the mean over all of them (over the ranks that
  // hold the same TP shard: the dp·cp group).
  if (mesh_->dp_cp().size() > 1) mesh_->dp_cp().all_reduce(store_->flat_grad(), ReduceOp::avg);
  optimizer_->step(*store_);
  synchronize(store_->device());  // a GPU's queued work belongs to this step (and its time)
  return loss / static_cast<double>(micro_batches.size());
}

}  // namespace usp::ch07
