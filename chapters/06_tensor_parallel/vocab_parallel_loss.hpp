// Exercise 06.2: cross-entropy over a vocabulary split across the tensor-parallel group, without
// any rank ever holding a whole row of logits. Implemented in
// solutions/06_tensor_parallel/vocab_parallel_loss.cpp; stubs in exercises/06_tensor_parallel/.
//
// The head is column-parallel over the vocabulary: rank r has the logits of tokens
// [vocab_begin, vocab_begin + V_r) for every row. The loss of row n,
//   loss_n = log Σ_v exp(z_nv) - z_n,target  =  lse_n - z_n,target,
// needs three numbers per row that no single rank has, and each is a reduction across the group
// of something every rank computes on its own columns:
//   m_n   = max_v z_nv                  (all-reduce max; for a stable exponent)
//   s_n   = Σ_v exp(z_nv - m_n)         (all-reduce sum)
//   z_n,t = the target's logit          (all-reduce sum: only the rank holding the target column
//                                        contributes, the others add 0)
// so lse_n = m_n + log s_n. Each reduction moves N numbers instead of the N·V logits.
// The gradient then needs no communication at all: with the saved lse,
//   ∂(mean loss)/∂z_nv = (exp(z_nv - lse_n) - [v == target_n]) / N
// on the columns each rank holds.
#pragma once
#include <cstdint>

#include "common/comm/communicator.hpp"
#include "common/tensor.hpp"

namespace usp::ch06 {

// Host memory: logits and targets are read on the host (the CPU, or the emulated device cpu:1;
// a GPU's logits take vocab_parallel_loss_cuda.hpp instead), and the tensors you hand to tp must
// live on tp.device(), as lse must on logits.device() (Tensor::empty's device defaults to cpu).
//
// logits [N, V_r] (f32 or bf16; columns [vocab_begin, vocab_begin + V_r) of the full logits),
// targets [N] i32 (token ids of the FULL vocabulary, V = V_r · tp.size()) ->
// returns the mean loss over the N rows (the same value on every rank; accumulate in double),
// and lse [N] f32: each row's log-sum-exp over the full vocabulary (for the backward). The caller
// passes lse undefined (a default Tensor) or of any shape: this function allocates it, [N] f32 on
// logits.device(), category Activation (it lives until the backward).
// A target outside [0, V) is refused on every rank alike, before any communication (so no rank
// is left in a collective), with usp::Error whose message contains exactly
//   "target <id> at row <n> is outside the vocabulary [0, <V>)"
// (e.g. "target 40 at row 2 is outside the vocabulary [0, 40)"); the tests look for that text.
double vocab_parallel_cross_entropy(Communicator& tp, const Tensor& logits, const Tensor& targets,
                                    std::int64_t vocab_begin, Tensor& lse);

// dlogits [N, V_r] f32 = scale · (exp(logits - lse) - onehot(targets)) / N on this rank's columns
// (overwritten). Local: no communication.
void vocab_parallel_cross_entropy_backward(const Tensor& logits, const Tensor& targets, std::int64_t vocab_begin,
                                           const Tensor& lse, Tensor& dlogits, float scale);

}  // namespace usp::ch06
