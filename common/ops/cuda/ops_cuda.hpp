// The CUDA twins of the ops in ops.hpp (CUDA builds only; internal to common/ops/, but for the
// vocabulary-shard steps at the end, which chapter 06 calls). Each op in
// common/ops/*.cpp checks its arguments, and when they live on a CUDA device calls its twin
// here with the same arguments and the same contract: same shapes, same accumulate/overwrite
// rules, f32/bf16/f16 tensors computed in fp32 (narrow ones widened into device Temporaries and
// rounded back to nearest even). The twins do the device work only — no checks of their own.
//   matmuls                 cuBLAS sgemm (device_gemm.hpp), plain fp32
//   attention               per (batch, head): cuBLAS for q·kᵀ, P·v and the backward products,
//                           a row kernel for the causal softmax and its backward; the [T, T]
//                           probabilities are materialised (chapter 12 brings flash attention)
//   attention_block_*       a block per query row (scores, softmax, out; backward: dq) and a
//                           block per key (dk, dv), the [Tq, Tk] scores of every (batch, head)
//                           materialised
//   everything else         the kernels of op_kernels.hpp, one per op
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp::ops::cuda_path {

void matmul_forward(const Tensor& x, const Tensor& w, Tensor& y, std::int64_t n, std::int64_t out, std::int64_t in);
void matmul_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw, bool accumulate_dx,
                     std::int64_t n, std::int64_t out, std::int64_t in);
void embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out);
void embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable);
void rmsnorm_forward(const Tensor& x, const Tensor& w, Tensor& y, Tensor& rstd, float eps);
void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx_acc,
                      Tensor& dw);
// cos_sin: the host's [2, T, D/2] table of cosines then sines (the CPU op's own), copied over.
void rope(Tensor& x, const Tensor& cos_sin, bool inverse);
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& probs);
void attention_forward_from_probs(const Tensor& probs, const Tensor& v, Tensor& out);
void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& probs,
                        Tensor& dq, Tensor& dk, Tensor& dv);
// q_pos, k_pos: i32 on the device. Scratch [B·H·Tq, Tk] f32 (one for forward, two for backward).
void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_pos,
                             const Tensor& k_pos, Tensor& out, Tensor& lse);
void attention_block_backward(const Tensor& dout, const Tensor& dlse, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& q_pos, const Tensor& k_pos, const Tensor& out,
                              const Tensor& lse, Tensor& dq, Tensor& dk, Tensor& dv);
void swiglu_forward(const Tensor& g, const Tensor& u, Tensor& z);
void swiglu_backward(const Tensor& dz, const Tensor& g, const Tensor& u, Tensor& dg, Tensor& du);
void add_inplace(Tensor& y, const Tensor& x);
void scale_inplace(Tensor& y, float s);
double cross_entropy_forward(const Tensor& logits, const Tensor& targets);
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, Tensor& dlogits, float scale);

// The local steps of the cross-entropy over a vocabulary split by columns across a group
// (chapter 06's vocabulary-parallel head on a GPU; on the CPU, exercise 06.2 computes them; the
// group's all-reduces go between them). logits [N, V_r] (f32/bf16/f16) hold the full vocabulary's
// columns [begin, begin + V_r); targets [N] i32 are full-vocabulary ids; every other tensor is
// [N] f32 on the logits' device.
//   row_max:      m_r[n] = max over the shard's columns
//   sum_exp:      s[n] = Σ e^(z - m[n]) over the shard's columns (m: the group's max), and
//                 zt[n] = z[n, target - begin] when the shard holds the target's column, else 0
//   backward:     dlogits [N, V_r] f32 = scale / N · (e^(z - lse[n]) - [column = target])
void vocab_shard_row_max(const Tensor& logits, Tensor& row_max);
void vocab_shard_sum_exp(const Tensor& logits, const Tensor& targets, std::int64_t begin, const Tensor& row_max,
                         Tensor& sum_exp, Tensor& target_logit);
void vocab_shard_cross_entropy_backward(const Tensor& logits, const Tensor& targets, std::int64_t begin,
                                        const Tensor& lse, Tensor& dlogits, float scale);

}  // namespace usp::ops::cuda_path
