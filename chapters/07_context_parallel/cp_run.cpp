// Running and measuring one CP variant (see cp_run.hpp).
#include "chapters/07_context_parallel/cp_run.hpp"

#include <algorithm>

#include "common/data/tokens_at.hpp"
#include "common/rng.hpp"
#include "common/report/median.hpp"
#include "common/report/row_gather.hpp"
#include "common/trace.hpp"
#include "common/train/held_out_traffic.hpp"
#include "common/train/validation_loss.hpp"

namespace usp::ch07 {

namespace {

// Deterministic values in [-1, 1), as a tensor of dtype.
Tensor random_tensor(const Shape& shape, const std::string& name, DType dtype) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 2.0f * rng::uniform(11, name, i) - 1.0f;
  return Tensor::from_floats(v, shape, dtype);
}

}  // namespace

std::string variant_name(const CpLayout& layout) {
  std::string a = attention_name(layout.attention), s = sharding_name(layout.sharding);
  std::replace(a.begin(), a.end(), '-', '_');
  s.erase(std::remove(s.begin(), s.end(), '-'), s.end());
  return a + "_" + s;  // ring_zigzag, all_gather_contiguous
}

double VariantResult::median_step_seconds() const { return report::median(step_seconds); }
double VariantResult::median_attention_seconds() const { return report::median(attention_seconds); }

std::vector<std::string> attention_comm_ops(CpAttention attention) {
  switch (attention) {
    case CpAttention::ring: return {"send", "recv"};
    case CpAttention::all_gather: return {"all_gather", "reduce_scatter"};
    case CpAttention::all_to_all: return {"all_to_all"};
  }
  return {};
}

std::int64_t attention_forward_peak(CpAttentionBase& attention, const Tensor& q, const Tensor& k, const Tensor& v,
                                    MemCategory category) {
  MemoryTracker& tracker = MemoryTracker::instance();
  {
    Tensor out = Tensor::empty(q.shape(), q.dtype(), MemCategory::Temporary, q.device()), saved;
    attention.attention_forward(q, k, v, out, saved);
  }
  // A collective's buffers are let go by the communicator's progress thread just after the op
  // completes; an op queued behind them (this barrier) completes only once they are gone.
  attention.comm().barrier();
  Tensor out = Tensor::empty(q.shape(), q.dtype(), MemCategory::Temporary, q.device()), saved;
  const std::int64_t before = tracker.current()[category];
  tracker.reset_peak();
  attention.attention_forward(q, k, v, out, saved);
  return tracker.peak()[category] - before;
}

VariantResult run_variant(VariantRunner& runner, Communicator& world, const TrainingConfig& cfg, const Dataset& data,
                          const Variant& variant, std::int64_t eval_batches) {
  MemoryTracker& tracker = MemoryTracker::instance();
  VariantResult r;
  r.variant = variant;
  r.kv_formula = attention_kv_bytes(cfg, variant.layout);
  CpTrainer trainer(world, cfg, variant.layout);
  r.cp_rank = trainer.cp().rank();
  r.dp_rank = trainer.dp().rank();
  r.dp_cp_rank = trainer.dp_cp().rank();
  r.counted = count_comm(cfg, variant.layout, variant.micro_batches, r.cp_rank, r.dp_cp_rank);
  // The peaks from here on: the trainer's state, and what its steps add.
  tracker.reset_peak();
  trainer.cp().reset_stats();  // building the mesh's groups is not training traffic
  trainer.dp_cp().reset_stats();
  TrainingVariant steps{.name = variant.layout.label(), .trace_name = variant.trace_name};
  // Every cp rank of a replica takes the replica's micro-batches (whole sequences; the trainer
  // keeps its tokens of each); every rank's loss is the mean over as many tokens, so the mean
  // over the ranks is the global one.
  steps.step = [&](std::int64_t step) {
    const double loss =
        trainer.step(rank_micro_batches(data, step, r.dp_rank, variant.micro_batches, cfg.mbs, cfg.seq));
    r.attention_seconds.push_back(trainer.attention().work().compute_seconds);
    return loss;
  };
  // The last step's blocks, read before an evaluation's forwards add theirs.
  steps.after_step = [&](std::int64_t) { r.blocks_per_step = trainer.attention().work().blocks_per_step; };
  // The only compute spans are the attention's own (no unit spans are recorded): of the time its
  // collectives ran, the part during which the rank was computing attention.
  steps.traced_step = [&](const std::vector<Span>& spans) {
    r.hidden = hidden_fraction(spans, attention_comm_ops(variant.layout.attention));
  };
  // The held-out loss. Groups of metrics (they count nothing the chapter reports): `replicas`, the
  // ranks of one (cp, tp) coordinate over the dp replicas, split the batches; `chunks`, the cp
  // ranks of one (dp, tp) coordinate, hold a batch's tokens. A tp group's ranks hold the same loss.
  Communicator& metrics = runner.metrics();
  const int tp_rank = trainer.tp().rank(), tp = variant.layout.tp;
  std::unique_ptr<Communicator> replicas, chunks;
  if (eval_batches > 0) {
    replicas = metrics.split(r.cp_rank * tp + tp_rank, r.dp_rank);
    chunks = metrics.split(r.dp_rank * tp + tp_rank, r.cp_rank);
  }
  HeldOutTraffic held_out(trainer.cp());
  const auto my_tokens_loss = [&](const Batch& b) {
    const Batch mine = tokens_at(b, trainer.positions());
    return trainer.model().evaluate(mine.inputs, mine.targets);
  };
  if (eval_batches > 0)
    steps.validation = [&](std::int64_t) {
      const MemoryTracker::Unmeasured off_the_books;  // the peaks are the steps'
      const double mine =
          held_out.count([&] { return validation_loss(*replicas, my_tokens_loss, data, eval_batches, cfg.mbs, cfg.seq); });
      double sum = 0;  // in cp-rank order: the same bits on every rank
      for (double v : report::gather_rows(*chunks, mine)) sum += v;
      return sum / static_cast<double>(chunks->size());
    };
  steps.after_steps = [&] {
    r.cp_comm = held_out.training_stats();
    r.dp_cp_comm = trainer.dp_cp().stats();
    r.memory = settled_memory({&trainer.cp(), &trainer.dp_cp()});
    // One attention forward on a layer's shapes, after the counters above are read.
    const ModelConfig& m = cfg.model;
    const std::int64_t T = cfg.seq / variant.layout.cp, D = m.head_dim();
    auto placed = [&](const Tensor& t) { return on_device(t, cfg.device, t.category()); };
    const Tensor q = placed(random_tensor({cfg.mbs, T, m.heads, D}, "q", cfg.dtype));
    const Tensor k = placed(random_tensor({cfg.mbs, T, m.kv_heads, D}, "k", cfg.dtype));
    const Tensor v = placed(random_tensor({cfg.mbs, T, m.kv_heads, D}, "v", cfg.dtype));
    r.attention_peak = attention_forward_peak(trainer.attention(), q, k, v);
    r.kv_measured = attention_forward_peak(trainer.attention(), q, k, v, MemCategory::CommBuffer);
  };
  const VariantRun run = runner.run(steps);
  r.losses = run.losses;
  r.step_seconds = run.step_seconds;
  r.val_steps = run.val_steps;
  r.val_losses = run.val_losses;
  r.parameters = trainer.params().flat().to_floats();
  return r;
}

}  // namespace usp::ch07
