// The attention ladder's launchers (CUDA builds only; chapter 12). Each checks the problem (head
// dim <= kMaxHeadDim, G dividing H) and launches on the given stream; pointers are device pointers.
//   01 naive          S and P in global memory: scores, softmax, output (three kernels)
//   02 fa1 forward    FlashAttention-1's forward: a block per (batch, head), the key tiles outside
//                     and the query tiles inside, each row's out, m, l kept in global memory
//   03 flash forward  FlashAttention-2's forward: a block per query tile, a thread per query row,
//                     K/V tiles in shared memory, the online softmax in registers
//   04 flash backward FlashAttention-2's backward: a block per key tile, a thread per key, query
//                     tiles in shared memory, probabilities recomputed from the lse; dq by atomics
//   05 tc forward     rung 03 on tensor cores: bf16 inputs, 4 warps per 64-query tile, both
//                     products by mma.sync, P kept in registers (head dim 64 or 128, sm_80+)
//   06 tc backward    rung 04 on tensor cores: 4 warps per 64-key tile, the five products by
//                     mma.sync, dS through shared memory for dq (head dim 64 or 128, sm_80+)
#pragma once
#include "kernels/attention/fa1_bodies.hpp"
#include "kernels/attention/flash_backward_bodies.hpp"
#include "kernels/attention/tc_flash_backward_bodies.hpp"
#include "kernels/attention/tc_flash_bodies.hpp"

namespace usp::attention {

// S: [B, H, T, T] fp32 device workspace.
void naive_forward(const AttentionF32& a, float* S, void* stream = nullptr);
// row_sum: [B, H, T] fp32 device workspace (each row's l until the end).
void fa1_forward(const AttentionF32& a, float* row_sum, void* stream = nullptr);
void flash_forward(const AttentionF32& a, void* stream = nullptr);
// Overwrites dq, dk, dv (zeroes them, then accumulates); delta is a [B, H, T] workspace.
void flash_backward(const AttentionBackwardF32& g, void* stream = nullptr);
void flash_forward_bf16_tc(const AttentionBf16& a, void* stream = nullptr);
// Overwrites dq, dk, dv (fp32; zeroes them, then accumulates); delta is a [B, H, T] workspace.
void flash_backward_bf16_tc(const AttentionBackwardBf16& g, void* stream = nullptr);

}  // namespace usp::attention
