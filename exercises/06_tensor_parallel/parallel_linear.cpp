// Exercise 06.1: the column- and row-parallel blocks with their conjugate operators f and g.
//
// The contract is in chapters/06_tensor_parallel/parallel_linear.hpp; the idea is in
// chapters/06_tensor_parallel/README.md ("Column, row, f and g" and "Sequence parallelism").
// Replace the throws with your code.
// Check it with: ./usp test 06 --exercises, then run it with ./usp run 06 --exercises
#include "chapters/06_tensor_parallel/parallel_linear.hpp"

#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch06 {

void column_parallel_forward(const TpGroup& group, const Tensor& x, const std::vector<Tensor>& w,
                             std::vector<Tensor>& y) {
  (void)group, (void)x, (void)w, (void)y;
  throw NotImplemented(
      "exercise 06.1: column_parallel_forward (hint: every rank needs the whole input; under sequence "
      "parallelism it holds only its rows)");
}

void column_parallel_backward(const TpGroup& group, const std::vector<Tensor>& dy, const Tensor& x,
                              const std::vector<Tensor>& w, std::vector<Tensor>& dw, Tensor& dx) {
  (void)group, (void)dy, (void)x, (void)w, (void)dw, (void)dx;
  throw NotImplemented(
      "exercise 06.1: column_parallel_backward (hint: each rank's dy·w is one term of the input's "
      "gradient; which collective is the backward of a copy?)");
}

void row_parallel_forward(const TpGroup& group, const Tensor& x, const Tensor& w, Tensor& y) {
  (void)group, (void)x, (void)w, (void)y;
  throw NotImplemented(
      "exercise 06.1: row_parallel_forward (hint: a rank's x·wᵀ covers only its input features: a "
      "partial sum)");
}

void row_parallel_backward(const TpGroup& group, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                           Tensor& dw) {
  (void)group, (void)dy, (void)x, (void)w, (void)dx, (void)dw;
  throw NotImplemented("exercise 06.1: row_parallel_backward (hint: the backward of a sum is a copy)");
}

}  // namespace usp::ch06
