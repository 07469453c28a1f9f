// Exercise 06.2's vocabulary-parallel cross-entropy for logits on a GPU (MegatronTp calls these
// when its tensors live on a CUDA device; the exercise itself reads host memory). The same three
// reductions over the tensor-parallel group (a device communicator), with the local steps — each
// row's max, Σ exp(z - m) and target logit over this rank's columns, and the gradient — as device
// kernels (common/ops/cuda/ops_cuda.hpp's vocabulary-shard steps). The N per-row numbers come to
// the host once to form lse (in double, as the exercise does) and the mean loss; lse goes back to
// the device as the Activation the backward reads. Same contract as vocab_parallel_loss.hpp.
// Without a CUDA build both throw.
#pragma once
#include <cstdint>

#include "common/comm/communicator.hpp"
#include "common/tensor.hpp"

namespace usp::ch06 {

double vocab_parallel_cross_entropy_cuda(Communicator& tp, const Tensor& logits, const Tensor& targets,
                                         std::int64_t vocab_begin, Tensor& lse);
void vocab_parallel_cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, std::int64_t vocab_begin,
                                                const Tensor& lse, Tensor& dlogits, float scale);

}  // namespace usp::ch06
