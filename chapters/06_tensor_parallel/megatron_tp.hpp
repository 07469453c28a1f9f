// MegatronTp: the model's LinearHook operations (common/model/linear_hook.hpp) over a
// tensor-parallel group: the column and row blocks of exercise 06.1, the vocabulary-parallel
// cross-entropy of exercise 06.2, and the vocabulary-parallel embedding below.
//
// Vocabulary-parallel embedding: rank r holds the table rows of tokens [r·V/t, (r+1)·V/t). Each
// rank looks up the tokens it owns and writes zeros for the others; summing over the group (g:
// all-reduce, or reduce-scatter under sequence parallelism) gives every token its row. Backward:
// g's backward of the stream gradient (identity, or all-gather of the rows), then each rank adds
// the rows of the tokens it owns into its part of the table's gradient.
//
// On GPUs (the store on a CUDA device, the group a device communicator: NCCL, or MPI through host
// memory) the blocks and the embedding are this same code over the ops' CUDA twins; the loss,
// whose exercise works on host memory, goes to vocab_parallel_loss_cuda.hpp's device version of it.
#pragma once
#include <cstdint>

#include "chapters/06_tensor_parallel/parallel_linear.hpp"
#include "common/model/linear_hook.hpp"

namespace usp::ch06 {

class MegatronTp final : public LinearHook {
 public:
  // vocab: the full vocabulary size (the model's), split evenly over the group.
  MegatronTp(Communicator& tp, bool sequence_parallel, std::int64_t vocab);

  std::int64_t size() const override { return group_.comm.size(); }
  bool sequence_parallel() const override { return group_.sequence_parallel; }
  Communicator& comm() const { return group_.comm; }
  std::int64_t vocab_begin() const { return vocab_begin_; }

  void column_forward(const Tensor& x, const std::vector<Tensor>& w, std::vector<Tensor>& y) override;
  void column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                       std::vector<Tensor>& dw, Tensor& dx) override;
  void row_forward(const Tensor& x, const Tensor& w, Tensor& y) override;
  void row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) override;
  void embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) override;
  void embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable) override;
  double loss_forward(const Tensor& logits, const Tensor& targets, Tensor& saved) override;
  void loss_backward(const Tensor& logits, const Tensor& targets, const Tensor& saved, Tensor& dlogits,
                     float scale) override;

 private:
  TpGroup group_;
  std::int64_t vocab_ = 0, vocab_begin_ = 0, vocab_rows_ = 0;
};

}  // namespace usp::ch06
