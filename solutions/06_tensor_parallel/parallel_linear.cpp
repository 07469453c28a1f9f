// Exercise 06.1, solution: column- and row-parallel blocks with their conjugate operators
// (the contract and the idea: chapters/06_tensor_parallel/parallel_linear.hpp).
#include "chapters/06_tensor_parallel/parallel_linear.hpp"

#include "common/ops/ops.hpp"

namespace usp::ch06 {

namespace {

// The whole block input f(x): x itself, or under sequence parallelism every rank's rows
// gathered in rank order, [n, C] -> [N, C] (a Temporary, freed by the caller's scope).
Tensor gather_rows(const TpGroup& group, const Tensor& x) {
  if (!group.sequence_parallel) return x;
  const std::int64_t t = group.comm.size();
  Tensor full = Tensor::empty({x.dim(0) * t, x.dim(1)}, x.dtype(), MemCategory::Temporary, x.device());
  group.comm.all_gather(x, full);
  return full;
}

// The sum over the group of every rank's `partial` [N, C], delivered as this rank's rows of it:
// all of them (all-reduce, in place) or, under sequence parallelism, rows [r·n, (r+1)·n) into
// out [n, C] (reduce-scatter). Without sequence parallelism out must be partial itself.
void sum_rows(const TpGroup& group, Tensor& partial, Tensor& out) {
  if (group.sequence_parallel)
    group.comm.reduce_scatter(partial, out);
  else
    group.comm.all_reduce(partial);
}

}  // namespace

void column_parallel_forward(const TpGroup& group, const Tensor& x, const std::vector<Tensor>& w,
                             std::vector<Tensor>& y) {
  const Tensor xf = gather_rows(group, x);  // f forward: identity, or all-gather of the rows
  for (std::size_t i = 0; i < w.size(); ++i) ops::matmul_forward(xf, w[i], y[i]);  // [N, out_i/t]
}

void column_parallel_backward(const TpGroup& group, const std::vector<Tensor>& dy, const Tensor& x,
                              const std::vector<Tensor>& w, std::vector<Tensor>& dw, Tensor& dx) {
  // The weight gradients need the whole input again: under sequence parallelism only x's own rows
  // were kept, so gather them a second time.
  const Tensor xf = gather_rows(group, x);
  // This rank's term of the input gradient, Σ_i dy[i]·w[i] [N, C]: the last weight first, as the
  // single-device decoder does, each weight's dw on the way.
  Tensor dxf = group.sequence_parallel
                   ? Tensor::empty({xf.dim(0), xf.dim(1)}, DType::f32, MemCategory::Temporary, dx.device())
                   : dx;
  for (std::size_t i = w.size(); i-- > 0;)
    ops::matmul_backward(dy[i], xf, w[i], dxf, dw[i], /*accumulate_dx=*/i + 1 != w.size());
  // f backward: every rank holds one term of the sum; add them (and keep my rows under SP).
  sum_rows(group, dxf, dx);
}

void row_parallel_forward(const TpGroup& group, const Tensor& x, const Tensor& w, Tensor& y) {
  // This rank's partial product over its input features [N, C], then g forward: the sum.
  if (!group.sequence_parallel) {
    ops::matmul_forward(x, w, y);
    sum_rows(group, y, y);
    return;
  }
  Tensor partial = Tensor::empty({x.dim(0), w.dim(0)}, y.dtype(), MemCategory::Temporary, y.device());
  ops::matmul_forward(x, w, partial);
  sum_rows(group, partial, y);
}

void row_parallel_backward(const TpGroup& group, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                           Tensor& dw) {
  // g backward: every rank needs the whole output gradient (identity, or all-gather of the rows).
  const Tensor dyg = gather_rows(group, dy);
  ops::matmul_backward(dyg, x, w, dx, dw);  // dx = dyg·w [N, in/t], dw += dygᵀ·x
}

}  // namespace usp::ch06
