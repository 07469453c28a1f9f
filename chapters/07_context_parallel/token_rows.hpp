// Token rows of a [B, T, ...] tensor (every sequence's tokens t0 .. t0+n-1): what the ring
// attention cuts its chunks out of q, k, v and their gradients with. Copies are Temporaries.
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp::ch07 {

// [B, T, ...] -> [B, n, ...]: tokens [t0, t0 + n) of each sequence, in dtype (f32 by default:
// the ring computes and accumulates in fp32).
Tensor take_tokens(const Tensor& x, std::int64_t t0, std::int64_t n, DType dtype = DType::f32);
// dst [B, T, ...] tokens [t0, t0 + n) = src [B, n, ...] (src f32; dst f32 or bf16), or += (add,
// f32 dst only).
void put_tokens(const Tensor& src, Tensor& dst, std::int64_t t0, bool add = false);

}  // namespace usp::ch07
