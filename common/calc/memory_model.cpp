#include "common/calc/memory_model.hpp"

#include <string>

#include "common/checked_math.hpp"
#include "common/error.hpp"

namespace usp::calc {

std::int64_t MemoryBreakdown::checked_total() const {
  return (Count(parameters) + gradients + optimizer + activations).value();
}

StateBytes state_bytes_per_parameter(Precision precision, bool fp32_grad_accum) {
  if (precision == Precision::fp32) return {4, 4, 8, 0};
  return {2, fp32_grad_accum ? 2 + 4 : 2, 4 + 8, 4};
}

std::int64_t playbook_num_parameters(const ModelConfig& cfg) {
  const Count h = cfg.hidden, L = cfg.layers, v = cfg.vocab;
  return (h * v + L * (12 * h * h + 13 * h) + 2 * h).value();
}

namespace {

// One layer's MLP on this rank: 3·h·f split t ways (dense), or E/ep experts of it plus the router.
Count mlp_per_rank(const TrainingSetup& setup, bool experts_only) {
  const ModelConfig& c = setup.model;
  const Count expert = Count(3) * c.hidden * c.ffn / setup.tp;
  if (!c.is_moe()) return experts_only ? Count(0) : expert;
  const Count held = expert * (c.experts / setup.ep);
  return experts_only ? held : held + Count(c.experts) * c.hidden;
}

std::int64_t layers_on_rank(const TrainingSetup& setup) { return layers_on_stage(setup); }

}  // namespace

std::int64_t expert_parameters_per_rank(const TrainingSetup& setup) {
  return (Count(layers_on_rank(setup)) * mlp_per_rank(setup, /*experts_only=*/true)).value();
}

std::int64_t parameters_per_rank(const TrainingSetup& setup) {
  const ModelConfig& c = setup.model;
  const Count t = setup.tp, h = c.hidden, d = c.head_dim();
  // kv heads per TP rank: split when t divides them, else one replicated head per rank.
  const Count kv_per_rank = c.kv_heads % setup.tp == 0 ? c.kv_heads / setup.tp : 1;
  // one layer: q and o (h × a·d each) and the MLP (3·h·f, or this rank's experts and the
  // router) split t ways, k and v per rank, the two RMSNorm weights (h each) replicated.
  const Count layer = 2 * h * c.heads * d / t + 2 * h * kv_per_rank * d + mlp_per_rank(setup, false) + 2 * h;
  const Count vocab_rows = Count(div_round_up(c.vocab, setup.tp)) * h;  // vocab-parallel embedding / head
  Count n = layers_on_stage(setup) * layer;
  if (setup.stage == 0) n = n + vocab_rows;  // the embedding
  if (setup.stage == setup.pp - 1) n = n + h + (c.tied_embeddings && setup.pp == 1 ? Count(0) : vocab_rows);  // norm + head
  return n.value();
}

std::int64_t zero_shard(std::int64_t n, std::int64_t dp) { return div_round_up(n, dp); }

std::int64_t playbook_layer_activation_bytes(const TrainingSetup& setup) {
  const ModelConfig& c = setup.model;
  const Count s = setup.seq, b = setup.mbs, h = c.hidden, a = c.heads, t = setup.tp;
  // Each rank holds s/c of the sequence: one factor s of every term becomes s/c (exact, since
  // validate() checks c | s). t divides a, and a divides h, so every /t below is exact.
  const Count sc = s / setup.cp;
  const Count sbh = sc * b * h, sbh_t = sc * b * (h / t);
  const Count scores = 5 * (a / t) * sc * s * b;  // softmax output, dropout mask and output
  const Count linear = setup.sp ? 34 * sbh_t : 10 * sbh + 24 * sbh_t;
  Count bytes16 = 0;  // the playbook's count: bytes with 16-bit activations
  switch (setup.recompute) {
    case Recompute::none: bytes16 = linear + scores; break;
    case Recompute::selective: bytes16 = linear; break;
    case Recompute::full: bytes16 = setup.sp ? 2 * sbh_t : 2 * sbh; break;
  }
  return (setup.precision == Precision::mixed ? bytes16 : 2 * bytes16).value();  // fp32: 4-byte elements
}

std::int64_t layers_on_first_stage(const TrainingSetup& setup) { return div_round_up(setup.model.layers, setup.pp); }

std::int64_t layers_on_stage(const TrainingSetup& setup) {
  const std::int64_t L = setup.model.layers, p = setup.pp;
  return L / p + (setup.stage < L % p ? 1 : 0);
}

std::int64_t microbatches_in_flight(const TrainingSetup& setup) { return setup.pp - setup.stage; }

MemoryBreakdown memory_per_rank(const TrainingSetup& setup) {
  setup.validate();
  const StateBytes per = state_bytes_per_parameter(setup.precision, setup.fp32_grad_accum);
  // The dense states shard over the dp·cp ranks that hold the same weights (context parallelism
  // splits tokens, not weights), the experts' over their own data-parallel group (dp·cp/ep).
  const std::int64_t experts = expert_parameters_per_rank(setup);
  const std::int64_t dense = parameters_per_rank(setup) - experts;
  const std::int64_t shard =
      zero_shard(dense, setup.dp * setup.cp) + zero_shard(experts, setup.dp * setup.cp / setup.ep);
  const std::int64_t n = dense + experts;
  MemoryBreakdown m;
  m.parameters = checked_mul(per.parameters, setup.zero >= 3 ? shard : n);
  m.gradients = checked_mul(per.gradients, setup.zero >= 2 ? shard : n);
  m.optimizer = checked_mul(per.optimizer, setup.zero >= 1 ? shard : n);
  m.master_weights = checked_mul(per.master_weights, setup.zero >= 1 ? shard : n);
  m.activations = (Count(layers_on_stage(setup)) * microbatches_in_flight(setup) *
                   playbook_layer_activation_bytes(setup)).value();
  (void)m.checked_total();  // a total that does not fit is an error here, not a wrapped number later
  return m;
}

std::int64_t course_layer_activation_bytes(const ModelConfig& cfg, std::int64_t seq, std::int64_t mbs,
                                           Recompute recompute, std::int64_t act_bytes, std::int64_t tp, bool sp) {
  if (seq < 1 || mbs < 1) throw UsageError("course_layer_activation_bytes: seq and mbs must be >= 1");
  if (act_bytes != 2 && act_bytes != 4)
    throw UsageError("course_layer_activation_bytes: act_bytes must be 2 (bf16) or 4 (fp32)");
  if (tp < 1) throw UsageError("course_layer_activation_bytes: tp must be >= 1, got " + std::to_string(tp));
  if (cfg.is_moe())
    throw UsageError("course_layer_activation_bytes counts the dense layer; a mixture of experts keeps what its "
                     "routing decides (the tracker measures it)");
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  if (cfg.heads % tp != 0 || cfg.kv_heads % tp != 0 || cfg.ffn % tp != 0)
    throw UsageError("course_layer_activation_bytes: tp " + str(tp) + " must divide the heads (" + str(cfg.heads) +
                     "), the kv heads (" + str(cfg.kv_heads) + ") and the ffn size (" + str(cfg.ffn) +
                     ") of this course's model");
  const Count tokens = Count(seq) * mbs, h = cfg.hidden, d = cfg.head_dim();
  if (sp && tokens.value() % tp != 0)
    throw UsageError("course_layer_activation_bytes: with sp, tp " + str(tp) + " must divide the " +
                     str(tokens.value()) + " tokens (mbs × seq)");
  // The residual stream's rows on this rank: all N, or N/t with sequence parallelism.
  const Count rows = sp ? tokens / tp : tokens;
  if (recompute == Recompute::full) return (rows * h * act_bytes).value();  // the layer input x only
  // Replicated (TP) or row-split (SP): x, h1, x2, h2, and rstd1, rstd2 in fp32.
  const Count stream_bytes = rows * (4 * h * act_bytes + 2 * 4);
  // On all N rows, this rank's heads / ffn columns: q, a (H/t heads), k, v (G/t heads), gate, up,
  // silu(gate)·up (F/t each).
  const Count heads = cfg.heads / tp, kv_heads = cfg.kv_heads / tp, ffn = cfg.ffn / tp;
  Count per_token = 2 * heads * d + 2 * kv_heads * d + 3 * ffn;
  if (recompute == Recompute::none) per_token += heads * seq;  // probabilities [b, H/t, s, s]
  return (stream_bytes + tokens * per_token * act_bytes).value();
}

}  // namespace usp::calc
