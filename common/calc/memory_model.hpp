// The playbook's memory formulas (chapters 01, 02, 05-08), evaluated exactly in bytes for one
// rank of a TrainingSetup. Conventions (all stated once here, echoed by usp_calc):
//
// Parameters. N is the exact count of this architecture (ModelConfig::num_parameters: GQA,
//   SwiGLU, untied head). The playbook's GPT-style estimate h·v + L·(12h² + 13h) + 2h is
//   available for comparison (playbook_num_parameters) but never used for bytes.
// States per parameter (bytes):        parameters  gradients  optimizer (k)
//   fp32                                   4           4        8 (Adam m, v)
//   mixed                                  2           2       12 (fp32 master 4 + Adam 8)
//   mixed + fp32 gradient accumulation     2         2 + 4     12
// ZeRO over N_d = dp·cp ranks (the ranks holding the same weights: context parallelism splits
//   the tokens, not the weights), on the rank's parameter count N_r (after TP and PP): stage >= 1
//   shards the optimizer states, >= 2 the gradients, 3 the parameters. A shard holds
//   ceil(N_r / N_d) elements (flat buffers padded to a multiple of N_d), so when N_d divides
//   N_r, mixed precision gives 2N+2N+12N/N_d, 2N+14N/N_d, 16N/N_d: the playbook's formulas.
// Tensor parallelism (t): every linear weight is split t ways; the vocabulary of the
//   embedding and of the head is split t ways (ceil(v/t) rows, padded); the RMSNorm weights
//   are replicated. kv heads split t ways, or, when t is a multiple of them, each rank keeps
//   one (replicated, as Megatron does for GQA).
// Pipeline parallelism (p): the numbers are for one stage, setup.stage, by default the FIRST,
//   the one that holds the most activations. Stage k runs floor(L/p) layers, one more when
//   k < L mod p (the first stage: ceil(L/p)); the first adds the embedding, the last the final
//   norm and the head. Under 1F1B with at least p micro-batches stage k keeps p - k micro-batches
//   in flight.
// Activations (playbook / Korthikanti et al. 2022), per layer, in bytes with 16-bit
//   activations, for s tokens per sequence and b sequences:
//     none       s·b·h·(34 + 5·a·s/h)           with TP  s·b·h·(10 + 24/t + 5·a·s/(h·t))
//     selective  34·s·b·h                       with TP  s·b·h·(10 + 24/t)
//     full       2·s·b·h (layer inputs only)    with TP  2·s·b·h
//   with TP+SP: s·b·h·(34/t + 5·a·s/(h·t)), 34·s·b·h/t, 2·s·b·h/t. With CP every term is divided
//   by c (each rank holds s/c tokens). fp32 activations are 4 bytes: the bytes double.
//   Total = layers on the rank × micro-batches in flight × per layer; the embedding output,
//   the final norm, the logits and the loss are NOT included, as in the playbook. The formula
//   assumes the GPT layer the playbook counts (MHA, 4h MLP, dropout masks), so it is an
//   estimate for a Llama layer; course_layer_activation_bytes is the exact count for this
//   course's decoder layer (with chapter 06's TP / SP split).
// Mixture of experts (E experts of ffn f, top-k): a layer's MLP is E·3·h·f expert weights plus
//   the router E·h; ep spreads the experts (each rank holds E/ep of them, TP splits each expert
//   t ways as it splits a dense MLP), the router and everything else is whole. ZeRO shards the
//   dense states over dp·cp and the experts' over their own data-parallel group, dp·cp/ep ranks.
//   Activations: the playbook's dense-layer formula (the MLP counted once, as a 4h MLP), an
//   estimate that ignores that each token's rows go to k experts of ffn f.
// Activations are never sharded by ZeRO.
#pragma once
#include <cstdint>

#include "common/calc/training_setup.hpp"
#include "common/model/config.hpp"

namespace usp::calc {

// Per-rank memory of one training step, by category (bytes).
struct MemoryBreakdown {
  std::int64_t parameters = 0;
  std::int64_t gradients = 0;       // includes the fp32 accumulation buffer when asked for
  std::int64_t optimizer = 0;       // Adam m and v, plus the fp32 master weights in mixed precision
  std::int64_t master_weights = 0;  // the part of `optimizer` that is fp32 master weights
  std::int64_t activations = 0;
  std::int64_t total() const { return parameters + gradients + optimizer + activations; }
  // total(), throwing OverflowError when the sum does not fit in 64 bits.
  std::int64_t checked_total() const;
};

// Bytes per parameter of each state, before ZeRO (see the table above).
struct StateBytes {
  std::int64_t parameters, gradients, optimizer, master_weights;
};
StateBytes state_bytes_per_parameter(Precision precision, bool fp32_grad_accum);

// The playbook's GPT-style parameter estimate h·v + L·(12h² + 13h) + 2h (one h·v: tied head,
// no position table, MHA, 4h MLP). For comparison only.
std::int64_t playbook_num_parameters(const ModelConfig& cfg);

// Parameters held by one rank after TP, PP (setup.stage) and EP, before ZeRO sharding.
// Equals cfg.num_parameters() when tp = pp = ep = 1.
std::int64_t parameters_per_rank(const TrainingSetup& setup);
// The experts' part of it (0 for a dense model).
std::int64_t expert_parameters_per_rank(const TrainingSetup& setup);

// Elements of one ZeRO shard of n elements over dp ranks: ceil(n / dp).
std::int64_t zero_shard(std::int64_t n, std::int64_t dp);

// The playbook's activation bytes of ONE layer on one rank (TP/SP/CP applied, one micro-batch).
std::int64_t playbook_layer_activation_bytes(const TrainingSetup& setup);

// Layers on the first pipeline stage (ceil(L/p)), on setup.stage, and the micro-batches
// setup.stage keeps in flight under 1F1B (p - stage; 1 without PP).
std::int64_t layers_on_first_stage(const TrainingSetup& setup);
std::int64_t layers_on_stage(const TrainingSetup& setup);
std::int64_t microbatches_in_flight(const TrainingSetup& setup);

// The per-rank breakdown: ZeRO applied to the states, activations =
// layers_on_stage × microbatches_in_flight × playbook_layer_activation_bytes.
MemoryBreakdown memory_per_rank(const TrainingSetup& setup);

// Exact bytes one decoder layer of THIS course's model (common/model/model.hpp) keeps for
// backward, for b sequences of s tokens (N = b·s tokens), on one rank, with the layer split over
// t = tp ranks the way chapter 06 splits it (Megatron column/row blocks; no CP). Per token, with
// C hidden, H heads, G kv heads, D head_dim, F ffn, elements of act_bytes each:
//   t = 1:     x, h1, x2, h2 (C each) + q, a (H·D each) + k, v (G·D each) + gate, up, silu·up
//              (F each), plus the two RMSNorm rstd values in fp32 (8 bytes);
//   TP:        the residual stream x, h1, x2, h2 and rstd1, rstd2 are replicated (as at t = 1);
//              q, a, k, v, gate, up, silu·up hold this rank's heads / ffn columns: H·D/t, G·D/t, F/t;
//   TP + SP:   the stream's rows are split over the t ranks: x, h1, x2, h2 and rstd1, rstd2 live on
//              N/t rows; q, k, v, a, gate, up, silu·up are as in TP (all N rows, heads / ffn split).
//   none adds the attention probabilities ((H/t)·s elements per token); selective drops them;
//   full keeps only the layer input x (C elements per stream row).
// So, with rows = N (TP) or N/t (SP) and e = act_bytes:
//   e·(4·C·rows + N·(2·H·D + 2·G·D + 3·F)/t) + 8·rows  [+ e·N·(H/t)·s with none];  full: e·C·rows.
// UsageError unless t divides H, G and F (this course's model does not replicate kv heads) and,
// with sp, N; and for a mixture of experts (what its layers keep depends on the routing). t = 1 (with or without sp) is the single-device count.
// The calculator's own count; chapter 01's exercise asks the student for the same quantity and
// its tests compare the student's answer with the tracker's measurement, not with this.
std::int64_t course_layer_activation_bytes(const ModelConfig& cfg, std::int64_t seq, std::int64_t mbs,
                                           Recompute recompute, std::int64_t act_bytes, std::int64_t tp = 1,
                                           bool sp = false);

}  // namespace usp::calc
