#include "chapters/06_tensor_parallel/megatron_tp.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "chapters/06_tensor_parallel/vocab_parallel_loss.hpp"
#include "chapters/06_tensor_parallel/vocab_parallel_loss_cuda.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch06 {

MegatronTp::MegatronTp(Communicator& tp, bool sequence_parallel, std::int64_t vocab)
    : group_{tp, sequence_parallel}, vocab_(vocab) {
  // check_tp_layout (tp_layout.hpp) has told the user; these are the invariants it ensures.
  USP_CHECK(!sequence_parallel || tp.size() > 1, "MegatronTp: sequence parallelism needs t > 1");
  USP_CHECK(vocab % tp.size() == 0, "MegatronTp: t must divide the vocabulary");
  vocab_rows_ = vocab / tp.size();
  vocab_begin_ = tp.rank() * vocab_rows_;
}

void MegatronTp::column_forward(const Tensor& x, const std::vector<Tensor>& w, std::vector<Tensor>& y) {
  column_parallel_forward(group_, x, w, y);
}

void MegatronTp::column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                                 std::vector<Tensor>& dw, Tensor& dx) {
  column_parallel_backward(group_, dy, x, w, dw, dx);
}

void MegatronTp::row_forward(const Tensor& x, const Tensor& w, Tensor& y) { row_parallel_forward(group_, x, w, y); }

void MegatronTp::row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) {
  row_parallel_backward(group_, dy, x, w, dx, dw);
}

namespace {

// The token ids on the host (the model hands CUDA tensors on a GPU): every rank checks and
// selects from them there.
std::vector<std::int32_t> host_ids(const Tensor& tokens) {
  const Tensor h = on_device(tokens, Device::cpu());
  const std::int32_t* p = h.data<std::int32_t>();
  return std::vector<std::int32_t>(p, p + h.numel());
}

Tensor i32_tensor(const std::vector<std::int32_t>& values, Device device) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, DType::i32, MemCategory::Temporary);
  std::copy(values.begin(), values.end(), t.data<std::int32_t>());
  return on_device(t, device);
}

// The tokens whose id falls in [begin, begin + rows): their positions in the batch, and those ids
// made local (id - begin), as i32 tensors [M] on `device` for the single-device ops. Moving rows
// between the batch [N, C] and the owned rows [M, C] is then an embedding lookup too, with the
// positions as ids: a gather is embedding_forward(positions, batch), and a scatter onto zeros is
// embedding_backward(positions, owned) (each position appears once, so adding onto 0 copies).
struct OwnedTokens {
  std::int64_t count = 0;  // M
  Tensor positions, local_ids;
};

OwnedTokens owned_tokens(const std::vector<std::int32_t>& tok, std::int64_t begin, std::int64_t rows, Device device) {
  std::vector<std::int32_t> positions, ids;
  for (std::size_t i = 0; i < tok.size(); ++i)
    if (tok[i] >= begin && tok[i] < begin + rows) {
      positions.push_back(static_cast<std::int32_t>(i));
      ids.push_back(static_cast<std::int32_t>(tok[i] - begin));
    }
  OwnedTokens o;
  o.count = static_cast<std::int64_t>(positions.size());
  if (o.count > 0) o.positions = i32_tensor(positions, device), o.local_ids = i32_tensor(ids, device);
  return o;
}

}  // namespace

void MegatronTp::embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) {
  const std::int64_t N = tokens.numel(), C = table.dim(1);
  const std::vector<std::int32_t> tok = host_ids(tokens);
  for (std::int64_t i = 0; i < N; ++i)  // every rank checks every token: all fail alike
    if (tok[static_cast<std::size_t>(i)] < 0 || tok[static_cast<std::size_t>(i)] >= vocab_)
      throw Error("embedding: token " + std::to_string(tok[static_cast<std::size_t>(i)]) + " at position " +
                  std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
  // The rows of the tokens I own, at their positions; zeros elsewhere: [N, C].
  const OwnedTokens owned = owned_tokens(tok, vocab_begin_, vocab_rows_, out.device());
  Tensor mine =
      sequence_parallel() ? Tensor::empty({N, C}, out.dtype(), MemCategory::Temporary, out.device()) : out;
  mine.zero();
  if (owned.count > 0) {
    Tensor rows = Tensor::empty({owned.count, C}, out.dtype(), MemCategory::Temporary, out.device());
    ops::embedding_forward(owned.local_ids, table, rows);   // my table's rows of my tokens [M, C]
    ops::embedding_backward(owned.positions, rows, mine);  // to their positions in the batch
  }
  // g forward: the sum over the group gives every token its row (under sequence parallelism,
  // only my rows of the stream).
  if (sequence_parallel())
    comm().reduce_scatter(mine, out);
  else
    comm().all_reduce(out);
}

void MegatronTp::embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable) {
  const std::int64_t N = tokens.numel(), C = dout.dim(1);
  // g backward: the whole stream gradient [N, C] (identity, or all-gather of the rows).
  Tensor full = dout;
  if (sequence_parallel()) {
    full = Tensor::empty({N, C}, dout.dtype(), MemCategory::Temporary, dout.device());
    comm().all_gather(dout, full);
  }
  const OwnedTokens owned = owned_tokens(host_ids(tokens), vocab_begin_, vocab_rows_, dout.device());
  if (owned.count == 0) return;
  Tensor rows = Tensor::empty({owned.count, C}, full.dtype(), MemCategory::Temporary, full.device());
  ops::embedding_forward(owned.positions, full, rows);  // the gradient rows of my tokens [M, C]
  ops::embedding_backward(owned.local_ids, rows, dtable);
}

double MegatronTp::loss_forward(const Tensor& logits, const Tensor& targets, Tensor& saved) {
  if (logits.device().is_cuda())  // the same reductions, the local steps on the device
    return vocab_parallel_cross_entropy_cuda(comm(), logits, targets, vocab_begin_, saved);
  return vocab_parallel_cross_entropy(comm(), logits, targets, vocab_begin_, saved);  // exercise 06.2
}

void MegatronTp::loss_backward(const Tensor& logits, const Tensor& targets, const Tensor& saved, Tensor& dlogits,
                               float scale) {
  if (logits.device().is_cuda())
    vocab_parallel_cross_entropy_backward_cuda(logits, targets, vocab_begin_, saved, dlogits, scale);
  else
    vocab_parallel_cross_entropy_backward(logits, targets, vocab_begin_, saved, dlogits, scale);
}

}  // namespace usp::ch06
