// The mixture-of-experts MLP of a decoder layer (ModelConfig::experts > 0; chapter 09), with its
// forward and backward written out like the dense layers'. N tokens of the layer's normalised
// stream h [N, C]; E experts, k per token, F each expert's intermediate size; Wr [E, C] the
// router; expert e: W1 [F, C] (gate), W3 [F, C] (up), W2 [C, F] (down).
//
// Forward
//   routing    logits = h·Wrᵀ [N, E] f32; p = softmax(logits) per token; token t's top-k experts
//              (the k largest p, ties to the lower index) with weights w = p / Σ_topk p.
//   capacity   the N·k assignments, visited in token order (and each token's choices best first),
//              are kept until their expert has taken cap = ceil(capacity_factor · N · k / E);
//              the rest are dropped (counted; the token keeps its residual). Dropless: no cap.
//   dispatch   the kept assignments' rows of h, grouped by expert (token order within one), go to
//              the experts' ranks (ExpertParallel; on one device they stay).
//   experts    each expert's rows X: Y = (silu(X·W1ᵀ) ⊙ X·W3ᵀ)·W2ᵀ.
//   combine    the rows come back; out[t] = Σ over t's kept assignments of w · Y[row].
//   aux loss   E · Σ_i f_i · P_i, f_i = the fraction of the N tokens routed to expert i (before
//              capacity; k assignments per token, so Σ f_i = k), P_i = the mean of p[·, i]; equal
//              load gives k. Its gradient reaches the router through P only (f counts).
// Backward, from dout [N, C] (the gradient of out) and the loss's scale for the aux term:
//   dw[t, j] = dout[t] · Y[row]; the experts get w · dout[t] per row (the same dispatch), give
//   back dX; dh[t] += dX[row]; the renormalised weights' gradient goes to p, p's to the logits
//   (softmax backward), the logits' to Wr and h.
// On a GPU the products (router, experts) and the rows' trips to the experts run on the device;
// the decisions and the per-token sums — softmax and top-k, capacity, gathering the rows, the
// weighted combine, dw, dh's scatter and the router's backward — run on the host, on copies of
// the N·E logits and the N·k rows (host Temporaries), with the same code and so the same
// numbers as on the CPU.
#pragma once
#include <cstdint>
#include <vector>

#include "common/model/config.hpp"
#include "common/model/expert_parallel.hpp"
#include "common/tensor.hpp"

namespace usp {

// The weights one MoE layer uses on this rank: the router and the experts held (local expert j =
// global expert first_expert + j), as views into the ParamStore; the gradients likewise.
struct MoeWeights {
  Tensor router;                       // [E, C]
  std::vector<Tensor> w1, w2, w3;      // [E/ep]
  Tensor d_router;
  std::vector<Tensor> d_w1, d_w2, d_w3;
};

// What one layer's routing decided (per rank, over its own N tokens).
struct MoeRouting {
  std::vector<std::int64_t> routed;   // [E]: assignments the router made to each expert (f_i · N)
  std::vector<std::int64_t> kept;     // [E]: those within capacity (the rows dispatched)
  std::int64_t dropped = 0;           // N·k − Σ kept
  double aux = 0;                     // E · Σ_i f_i · P_i (without the coefficient)
  // A fingerprint (FNV-1a) of every assignment's expert and kept/dropped fate, in order: equal
  // fingerprints, the same routing decisions (finite-difference tests stay within one).
  std::uint64_t decisions = 0;
};

// What the backward reads (all tracked tensors; Activations when kept for backward).
struct MoeSaved {
  Tensor probs;     // [N, E] f32
  Tensor choice;    // [N, k] i32: the expert of each of t's k slots, best first
  Tensor weight;    // [N, k] f32: its renormalised weight
  Tensor row;       // [N, k] i32: the assignment's row among the dispatched rows, -1 if dropped
  Tensor x, g, u, z;  // at the experts, grouped by local expert: x [R', C]; g, u, z [R', F]
  Tensor y;         // [R, C] the experts' outputs back here, in dispatch order
  ExpertRoute route;
  MoeRouting routing;

  std::int64_t bytes() const;
};

// out [N, C] (overwritten, h's dtype) = the MoE MLP of h [N, C]. keep: fill `saved` (Activations);
// otherwise everything is a Temporary. Collective over the ep group (every rank calls it for the
// same layer, each with its own tokens).
void moe_forward(const ModelConfig& c, ExpertParallel& ep, const MoeWeights& w, const Tensor& h, bool keep,
                 Tensor& out, MoeSaved& saved);

// dout [N, C] f32 -> dh [N, C] f32 (overwritten); weight gradients accumulated into w.d_*;
// aux_scale = the aux loss's weight in the objective (loss_scale · router_aux_loss_coef / MoE
// layers). Releases `saved`. Collective over the ep group.
void moe_backward(const ModelConfig& c, ExpertParallel& ep, MoeWeights& w, const Tensor& h, const Tensor& dout,
                  float aux_scale, MoeSaved& saved, Tensor& dh);

}  // namespace usp
