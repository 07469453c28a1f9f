#include "common/calc/memory_model.hpp"

#include "common/error.hpp"

namespace usp::calc {

namespace {
std::int64_t ceil_div(std::int64_t n, std::int64_t d) { return (n + d - 1) / d; }
}  // namespace

StateBytes state_bytes_per_parameter(Precision precision, bool fp32_grad_accum) {
  if (precision == Precision::fp32) return {4, 4, 8, 0};
  return {2, fp32_grad_accum ? 2 + 4 : 2, 4 + 8, 4};
}

std::int64_t playbook_num_parameters(const ModelConfig& cfg) {
  const std::int64_t h = cfg.hidden, L = cfg.layers, v = cfg.vocab;
  return h * v + L * (12 * h * h + 13 * h) + 2 * h;
}

std::int64_t parameters_per_rank(const TrainingSetup& setup) {
  const ModelConfig& c = setup.model;
  const std::int64_t t = setup.tp, h = c.hidden, d = c.head_dim();
  // kv heads per TP rank: split when t divides them, else one replicated head per rank.
  const std::int64_t kv_per_rank = c.kv_heads % t == 0 ? c.kv_heads / t : 1;
  // one layer: q and o (h × a·d each) and the MLP (3·h·f) split t ways, k and v per rank,
  // the two RMSNorm weights (h each) replicated.
  const std::int64_t layer = 2 * h * c.heads * d / t + 2 * h * kv_per_rank * d + 3 * h * c.ffn / t + 2 * h;
  const std::int64_t vocab_rows = ceil_div(c.vocab, t) * h;  // vocab-parallel embedding / head
  if (setup.pp == 1) return vocab_rows + c.layers * layer + h + (c.tied_embeddings ? 0 : vocab_rows);
  return vocab_rows + layers_on_first_stage(setup) * layer;  // the first stage: embedding + layers
}

std::int64_t zero_shard(std::int64_t n, std::int64_t dp) { return ceil_div(n, dp); }

std::int64_t playbook_layer_activation_bytes(const TrainingSetup& setup) {
  const ModelConfig& c = setup.model;
  const std::int64_t s = setup.seq, b = setup.mbs, h = c.hidden, a = c.heads, t = setup.tp;
  // Each rank holds s/c of the sequence: one factor s of every term becomes s/c (exact, since
  // validate() checks c | s). t divides a, and a divides h, so every /t below is exact.
  const std::int64_t sc = s / setup.cp;
  const std::int64_t sbh = sc * b * h, sbh_t = sc * b * (h / t);
  const std::int64_t scores = 5 * (a / t) * sc * s * b;  // softmax output, dropout mask and output
  const std::int64_t linear = setup.sp ? 34 * sbh_t : 10 * sbh + 24 * sbh_t;
  std::int64_t bytes16 = 0;  // the playbook's count: bytes with 16-bit activations
  switch (setup.recompute) {
    case Recompute::none: bytes16 = linear + scores; break;
    case Recompute::selective: bytes16 = linear; break;
    case Recompute::full: bytes16 = setup.sp ? 2 * sbh_t : 2 * sbh; break;
  }
  return setup.precision == Precision::mixed ? bytes16 : 2 * bytes16;  // fp32: 4-byte elements
}

std::int64_t layers_on_first_stage(const TrainingSetup& setup) { return ceil_div(setup.model.layers, setup.pp); }

std::int64_t microbatches_in_flight(const TrainingSetup& setup) { return setup.pp; }

MemoryBreakdown memory_per_rank(const TrainingSetup& setup) {
  setup.validate();
  const StateBytes per = state_bytes_per_parameter(setup.precision, setup.fp32_grad_accum);
  const std::int64_t n = parameters_per_rank(setup);
  const std::int64_t shard = zero_shard(n, setup.dp);
  MemoryBreakdown m;
  m.parameters = per.parameters * (setup.zero >= 3 ? shard : n);
  m.gradients = per.gradients * (setup.zero >= 2 ? shard : n);
  m.optimizer = per.optimizer * (setup.zero >= 1 ? shard : n);
  m.master_weights = per.master_weights * (setup.zero >= 1 ? shard : n);
  m.activations = layers_on_first_stage(setup) * microbatches_in_flight(setup) *
                  playbook_layer_activation_bytes(setup);
  return m;
}

std::int64_t course_layer_activation_bytes(const ModelConfig& cfg, std::int64_t seq, std::int64_t mbs,
                                           Recompute recompute, std::int64_t act_bytes) {
  if (seq < 1 || mbs < 1) throw UsageError("course_layer_activation_bytes: seq and mbs must be >= 1");
  if (act_bytes != 2 && act_bytes != 4)
    throw UsageError("course_layer_activation_bytes: act_bytes must be 2 (bf16) or 4 (fp32)");
  const std::int64_t tokens = seq * mbs, h = cfg.hidden;
  if (recompute == Recompute::full) return tokens * h * act_bytes;  // the layer input x only
  // x, h1, q, a, x2, h2 + k, v + gate, up, silu(gate)·up
  std::int64_t elements = 5 * h + cfg.q_dim() + 2 * cfg.kv_dim() + 3 * cfg.ffn;
  if (recompute == Recompute::none) elements += cfg.heads * seq;  // probabilities [b, a, s, s]
  const std::int64_t rstd_bytes = 2 * 4;                           // rstd1, rstd2 in fp32
  return tokens * (elements * act_bytes + rstd_bytes);
}

}  // namespace usp::calc
