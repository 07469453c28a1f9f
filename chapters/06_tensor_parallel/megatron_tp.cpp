#include "chapters/06_tensor_parallel/megatron_tp.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "chapters/06_tensor_parallel/vocab_parallel_loss.hpp"
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

// The positions of tokens [N] whose id falls in [begin, begin + rows), and those ids made local
// (id - begin) as an i32 tensor [M] for the single-device ops.
struct OwnedTokens {
  std::vector<std::int64_t> positions;
  Tensor local_ids;
};

OwnedTokens owned_tokens(const Tensor& tokens, std::int64_t begin, std::int64_t rows) {
  OwnedTokens o;
  const std::int32_t* tok = tokens.data<std::int32_t>();
  for (std::int64_t i = 0; i < tokens.numel(); ++i)
    if (tok[i] >= begin && tok[i] < begin + rows) o.positions.push_back(i);
  o.local_ids = Tensor::empty({static_cast<std::int64_t>(o.positions.size())}, DType::i32, MemCategory::Temporary);
  for (std::size_t j = 0; j < o.positions.size(); ++j)
    o.local_ids.data<std::int32_t>()[j] = static_cast<std::int32_t>(tok[o.positions[j]] - begin);
  return o;
}

// scatter: row i of `from` [M, C] to row positions[i] of `to` [N, C]; else row positions[i] of
// `from` [N, C] to row i of `to` [M, C].
void copy_rows(const Tensor& from, Tensor& to, const std::vector<std::int64_t>& positions, bool scatter) {
  const std::size_t row = static_cast<std::size_t>(from.dim(1)) * dtype_size(from.dtype());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const std::size_t a = i * row, b = static_cast<std::size_t>(positions[i]) * row;
    std::memcpy(static_cast<char*>(to.raw()) + (scatter ? b : a),
                static_cast<const char*>(from.raw()) + (scatter ? a : b), row);
  }
}

}  // namespace

void MegatronTp::embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) {
  const std::int64_t N = tokens.numel(), C = table.dim(1);
  const std::int32_t* tok = tokens.data<std::int32_t>();
  for (std::int64_t i = 0; i < N; ++i)  // every rank checks every token: all fail alike
    if (tok[i] < 0 || tok[i] >= vocab_)
      throw Error("embedding: token " + std::to_string(tok[i]) + " at position " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
  // The rows of the tokens I own, at their positions; zeros elsewhere: [N, C].
  const OwnedTokens owned = owned_tokens(tokens, vocab_begin_, vocab_rows_);
  Tensor rows = Tensor::empty({owned.local_ids.numel(), C}, out.dtype(), MemCategory::Temporary);
  if (rows.numel() > 0) ops::embedding_forward(owned.local_ids, table, rows);
  Tensor mine = sequence_parallel() ? Tensor::empty({N, C}, out.dtype(), MemCategory::Temporary) : out;
  mine.zero();
  copy_rows(rows, mine, owned.positions, /*scatter=*/true);
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
    full = Tensor::empty({N, C}, dout.dtype(), MemCategory::Temporary);
    comm().all_gather(dout, full);
  }
  const OwnedTokens owned = owned_tokens(tokens, vocab_begin_, vocab_rows_);
  if (owned.positions.empty()) return;
  Tensor rows = Tensor::empty({owned.local_ids.numel(), C}, full.dtype(), MemCategory::Temporary);
  copy_rows(full, rows, owned.positions, /*scatter=*/false);
  ops::embedding_backward(owned.local_ids, rows, dtable);
}

double MegatronTp::loss_forward(const Tensor& logits, const Tensor& targets, Tensor& saved) {
  return vocab_parallel_cross_entropy(comm(), logits, targets, vocab_begin_, saved);
}

void MegatronTp::loss_backward(const Tensor& logits, const Tensor& targets, const Tensor& saved, Tensor& dlogits,
                               float scale) {
  vocab_parallel_cross_entropy_backward(logits, targets, vocab_begin_, saved, dlogits, scale);
}

}  // namespace usp::ch06
