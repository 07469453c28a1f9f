// The CUDA ops' launchers (CUDA builds only; no CUDA headers here). Pointers are device pointers,
// fp32 unless said otherwise, row-major; every launch goes on the compute stream
// (common/cuda/streams.hpp), so the ops run in issue order with each other, with cuBLAS and
// with the core's copies. Each
// kernel calls one body of op_bodies.hpp per thread (element, column or row work, as described
// there); the ops in common/ops/*.cpp check shapes and dtypes and then call these.
#pragma once
#include <cstdint>

#include "common/dtype.hpp"
#include "common/ops/cuda/op_bodies.hpp"

namespace usp::ops::cuda_kernels {

using i64 = std::int64_t;

// ---- conversions: bf16 / f16 <-> f32 (round to nearest even on the way down) ------------------
void widen(DType src_type, const void* src, float* dst, i64 n);
void narrow(const float* src, DType dst_type, void* dst, i64 n);

// ---- element-wise --------------------------------------------------------------------------------
void add(const float* x, float* y, i64 n);  // y += x
void scale(float s, float* y, i64 n);       // y *= s
void swiglu_forward(const float* g, const float* u, float* z, i64 n);
void swiglu_backward(const float* dz, const float* g, const float* u, float* dg, float* du, i64 n);
void embedding_forward(const std::int32_t* tokens, const float* table, i64 N, i64 C, float* out);
void embedding_backward(const std::int32_t* tokens, const float* dout, i64 N, i64 C, float* dtable);  // +=
// x [B, T, H, D] in place; cos_sin [2, T, D/2] (device); sign +1 forward, -1 backward.
void rope(float* x, const float* cos_sin, i64 B, i64 T, i64 H, i64 D, float sign);
// The step on w, m, v [n] fp32 from gradients g [n] of g_type (f32, bf16 or f16: widened as read).
void adamw(const cuda_body::AdamWStep& s, DType g_type, const void* g, float* w, float* m, float* v, i64 n);

// ---- row-wise ------------------------------------------------------------------------------------
void rmsnorm_forward(const float* x, const float* w, float eps, i64 N, i64 C, float* y, float* rstd);
// dx += ..., dw += ... (see op_bodies.hpp)
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd, i64 N, i64 C, float* dx,
                      float* dw);
// row_loss [N] = m + log Σ e^(x - m) - x[target] per row (the caller sums them in double).
void cross_entropy_forward(const float* logits, const std::int32_t* targets, i64 N, i64 V, float* row_loss);
// dlogits = k · (softmax(logits) - onehot); dlogits may equal logits (each row read before written).
void cross_entropy_backward(const float* logits, const std::int32_t* targets, i64 N, i64 V, float k,
                            float* dlogits);
// The vocabulary-parallel cross-entropy's local steps (op_bodies.hpp): logits [N, V_r] are the
// full vocabulary's columns [begin, begin + V_r); row_max, sum_exp, target_logit, lse are [N].
void shard_row_max(const float* logits, i64 N, i64 V_r, float* row_max);
void shard_sum_exp(const float* logits, const std::int32_t* targets, i64 N, i64 V_r, i64 begin, const float* row_max,
                   float* sum_exp, float* target_logit);
// dlogits = k · (e^(logits - lse) - onehot(target - begin)) on the shard's columns.
void shard_cross_entropy_backward(const float* logits, const std::int32_t* targets, i64 N, i64 V_r, i64 begin,
                                  const float* lse, float k, float* dlogits);
// Attention of a block of queries over a block of keys at given positions (op_bodies.hpp's
// AttentionBlock; q_pos / k_pos device pointers). scratch, P, dS: [B·H·Tq, Tk]. lse [B, H, Tq].
// Forward overwrites out and lse; backward ACCUMULATES into dq, dk, dv (dlse may be null: 0).
void attention_block_forward(const cuda_body::AttentionBlock& a, const float* q, const float* k, const float* v,
                             float* scratch, float* out, float* lse);
void attention_block_backward(const cuda_body::AttentionBlock& a, const float* dout, const float* dlse,
                              const float* q, const float* k, const float* v, const float* out, const float* lse,
                              float* P, float* dS, float* dq, float* dk, float* dv);
// Attention's row softmax over `rows` rows of width T (row stride T) starting at query row r0:
// row r (query r0 + r) keeps its first r0 + r + 1 entries (causal), zero beyond; in place.
void causal_softmax_rows(float* p, i64 rows, i64 T, i64 r0);
// ds <- p ∘ (ds - rowsum(ds ∘ p)) over the same causal rows, in place in ds; 0 above the diagonal.
void causal_softmax_backward_rows(const float* p, float* ds, i64 rows, i64 T, i64 r0);

}  // namespace usp::ops::cuda_kernels
