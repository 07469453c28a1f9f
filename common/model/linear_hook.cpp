#include "common/model/linear_hook.hpp"

#include <string>

#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp {

std::int64_t LinearHook::stream_rows(std::int64_t n_tokens) const {
  if (!sequence_parallel()) return n_tokens;
  if (n_tokens % size() != 0)
    throw UsageError("sequence parallelism splits the batch's " + std::to_string(n_tokens) +
                     " tokens (mbs × seq) over t = " + std::to_string(size()) + " ranks: t must divide them");
  return n_tokens / size();
}

void UnsplitLinears::column_forward(const Tensor& x, const std::vector<Tensor>& w, std::vector<Tensor>& y) {
  for (std::size_t i = 0; i < w.size(); ++i) ops::matmul_forward(x, w[i], y[i]);
}

void UnsplitLinears::column_backward(const std::vector<Tensor>& dy, const Tensor& x, const std::vector<Tensor>& w,
                                   std::vector<Tensor>& dw, Tensor& dx) {
  // Last weight first (the reverse of the forward), the first one overwriting dx.
  for (std::size_t i = w.size(); i-- > 0;)
    ops::matmul_backward(dy[i], x, w[i], dx, dw[i], /*accumulate_dx=*/i + 1 != w.size());
}

void UnsplitLinears::row_forward(const Tensor& x, const Tensor& w, Tensor& y) { ops::matmul_forward(x, w, y); }

void UnsplitLinears::row_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw) {
  ops::matmul_backward(dy, x, w, dx, dw);
}

void UnsplitLinears::embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) {
  ops::embedding_forward(tokens, table, out);
}

void UnsplitLinears::embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable) {
  ops::embedding_backward(tokens, dout, dtable);
}

double UnsplitLinears::loss_forward(const Tensor& logits, const Tensor& targets, Tensor& /*saved*/) {
  return ops::cross_entropy_forward(logits, targets);
}

void UnsplitLinears::loss_backward(const Tensor& logits, const Tensor& targets, const Tensor& /*saved*/,
                                 Tensor& dlogits, float scale) {
  ops::cross_entropy_backward(logits, targets, dlogits, scale);
}

}  // namespace usp
