// The attention ladder's launchers (CUDA builds only; chapter 12). Each checks the problem (head
// dim <= kMaxHeadDim, G dividing H) and launches on the given stream; pointers are device pointers.
//   01 naive          S and P in global memory: scores, softmax, output (three kernels)
//   02 flash forward  FlashAttention-2's forward: a block per query tile, a thread per query row,
//                     K/V tiles in shared memory, the online softmax in registers
#pragma once
#include "kernels/attention/attention_problem.hpp"

namespace usp::attention {

// S: [B, H, T, T] fp32 device workspace.
void naive_forward(const AttentionF32& a, float* S, void* stream = nullptr);
void flash_forward(const AttentionF32& a, void* stream = nullptr);

}  // namespace usp::attention
