// The attention ladder's launchers (CUDA builds only; chapter 12). Each checks the problem (head
// dim <= kMaxHeadDim, G dividing H) and launches on the given stream; pointers are device pointers.
//   01 naive          S and P in global memory: scores, softmax, output (three kernels)
//   02 flash forward  FlashAttention-2's forward: a block per query tile, a thread per query row,
//                     K/V tiles in shared memory, the online softmax in registers
//   03 flash backward FlashAttention-2's backward: a block per key tile, a thread per key, query
//                     tiles in shared memory, probabilities recomputed from the lse; dq by atomics
#pragma once
#include "kernels/attention/flash_backward_bodies.hpp"

namespace usp::attention {

// S: [B, H, T, T] fp32 device workspace.
void naive_forward(const AttentionF32& a, float* S, void* stream = nullptr);
void flash_forward(const AttentionF32& a, void* stream = nullptr);
// Overwrites dq, dk, dv (zeroes them, then accumulates); delta is a [B, H, T] workspace.
void flash_backward(const AttentionBackwardF32& g, void* stream = nullptr);

}  // namespace usp::attention
