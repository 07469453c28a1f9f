// Flash attention on a CUDA device: flash_attention_forward/backward (flash_attention.hpp) call
// these when their tensors live on a GPU. They wrap kernels/attention's rung 03 (the FA2 forward)
// and rung 04 (its backward) around tensors: fp32 tensors go to the kernels as they are; bf16 and
// f16 ones are widened into fp32 device Temporaries and the results rounded back (ops::convert),
// as the core's CUDA ops do with narrow dtypes. The kernels' tiles are fixed at 64 × 64 (the CPU's
// --q-rows/--k-cols do not apply) and the head dim is at most 128. Shapes are checked by the
// callers; lse is [B, H, T] f32. Without a CUDA build both throw.
#pragma once
#include "common/tensor.hpp"

namespace usp::ch12 {

void flash_attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, Tensor& out,
                                  Tensor& lse);
void flash_attention_backward_cuda(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& out, const Tensor& lse, bool causal, Tensor& dq, Tensor& dk,
                                   Tensor& dv);

}  // namespace usp::ch12
