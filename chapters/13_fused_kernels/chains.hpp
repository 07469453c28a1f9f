// Chapter 13's six chains, each with its unfused variant (one pass per operator, as an eager
// framework runs them), its fused variant (one pass; for SwiGLU the core's own op, already fused)
// and, for the norm chains, the core's ops as the model used them before this chapter. Inputs are filled from the counter-based RNG (seeded by name), so every
// variant of a chain starts from the same values.
//
//   norm_fwd   residual + RMSNorm forward     x, r [N, C], w [C]      -> x2, h [N, C], rstd [N]
//   norm_bwd   residual + RMSNorm backward    dh, x2 [N, C], w, rstd  -> dx [N, C] (+=), dw [C] (+=)
//   swiglu_fwd SwiGLU forward                 g, u [N, F]             -> z [N, F]
//   swiglu_bwd SwiGLU backward                dz, g, u [N, F]         -> dg, du [N, F]
//   softmax_ce softmax + cross-entropy, forward and backward
//                                             logits [N, V], targets  -> loss [N], dlogits [N, V]
//   adamw      AdamW step                     g [P]; p, m, v [P]      -> p, m, v (in place)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/fused_kernels.hpp"
#include "chapters/13_fused_kernels/kernel_passes.hpp"

namespace usp::ch13 {

struct ChainSizes {
  std::int64_t rows = 2048;     // N: tokens (batch × sequence)
  std::int64_t hidden = 2048;   // C
  std::int64_t ffn = 5632;      // F
  std::int64_t vocab = 32768;   // V
  std::int64_t params = 16 << 20;  // P: AdamW's parameters
};

Chain residual_norm_forward_chain(std::int64_t rows, std::int64_t hidden);
Chain residual_norm_backward_chain(std::int64_t rows, std::int64_t hidden);
Chain swiglu_forward_chain(std::int64_t rows, std::int64_t ffn);
Chain swiglu_backward_chain(std::int64_t rows, std::int64_t ffn);
Chain softmax_cross_entropy_chain(std::int64_t rows, std::int64_t vocab);
Chain adamw_chain(std::int64_t params);

// The AdamW chain's step: the core's AdamWConfig defaults at step 10 (bias corrections not 1).
fused::AdamWStep adamw_chain_step();

// The ids above, in order, and the chain of one id at these sizes (Error for an unknown id).
const std::vector<std::string>& chain_ids();
Chain make_chain(const std::string& id, const ChainSizes& sizes);

}  // namespace usp::ch13
