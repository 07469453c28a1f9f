// FLOP counting: exact counts for known shapes (a multiply-add is 2; attention's two causal
// matmuls count as full T×T products, the Megatron/playbook convention), nothing for the
// element-wise ops, and a counter per thread.
#include <catch2/catch.hpp>

#include <thread>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

TEST_CASE("matmul counts 2·N·out·in per product", "[ops][flops]") {
  const std::int64_t n = 6, in = 5, out = 3;
  Tensor x = tensor_of(random_values(n * in, 81), {n, in}), w = tensor_of(random_values(out * in, 82), {out, in});
  Tensor y = Tensor::empty({n, out}), dx = Tensor::empty({n, in}), dw = Tensor::zeros({out, in}), none;
  ops::reset_flop_count();
  ops::matmul_forward(x, w, y);
  CHECK(ops::flop_count() == 2 * 6 * 5 * 3);
  ops::reset_flop_count();
  ops::matmul_backward(y, x, w, dx, dw);
  CHECK(ops::flop_count() == 2 * 2 * 6 * 5 * 3);
  ops::reset_flop_count();
  ops::matmul_backward(y, x, w, none, dw);
  CHECK(ops::flop_count() == 2 * 6 * 5 * 3);
}

TEST_CASE("attention counts 2·B·H·T²·D per matmul: 2 forward, 4 backward, +1 to recompute", "[ops][flops]") {
  const std::int64_t b = 2, t = 9, h = 4, g = 2, d = 3;
  const std::int64_t per_matmul = 2 * b * h * t * t * d;
  Tensor q = tensor_of(random_values(b * t * h * d, 83), {b, t, h, d});
  Tensor k = tensor_of(random_values(b * t * g * d, 84), {b, t, g, d});
  Tensor v = tensor_of(random_values(b * t * g * d, 85), {b, t, g, d});
  Tensor out = Tensor::empty({b, t, h, d}), probs = Tensor::empty({b, h, t, t}), none;
  Tensor dq = Tensor::empty({b, t, h, d}), dk = Tensor::empty({b, t, g, d}), dv = Tensor::empty({b, t, g, d});
  ops::reset_flop_count();
  ops::attention_forward(q, k, v, out, probs);
  CHECK(ops::flop_count() == 2 * per_matmul);
  ops::reset_flop_count();
  ops::attention_backward(out, q, k, v, probs, dq, dk, dv);
  CHECK(ops::flop_count() == 4 * per_matmul);
  ops::reset_flop_count();
  ops::attention_backward(out, q, k, v, none, dq, dk, dv);
  CHECK(ops::flop_count() == 5 * per_matmul);
}

TEST_CASE("element-wise ops count nothing", "[ops][flops]") {
  const std::int64_t n = 4, c = 6;
  Tensor x = tensor_of(random_values(n * c, 86), {n, c}), w = tensor_of(random_values(c, 87), {c});
  Tensor y = Tensor::empty({n, c}), rstd = Tensor::empty({n}), dx = Tensor::zeros({n, c}), dw = Tensor::zeros({c});
  Tensor x4 = tensor_of(random_values(n * c, 88), {1, n, 1, c});
  Tensor tokens = int_tensor({0, 1, 2, 3}, {n}), dl = Tensor::empty({n, c});
  ops::reset_flop_count();
  ops::rmsnorm_forward(x, w, y, rstd, 1e-5f);
  ops::rmsnorm_backward(y, x, w, rstd, dx, dw);
  ops::rope_forward(x4, 10000.0);
  ops::rope_backward(x4, 10000.0);
  ops::swiglu_forward(x, y, dx);
  ops::swiglu_backward(x, y, x, dx, dl);
  ops::embedding_forward(tokens, x, y);
  ops::embedding_backward(tokens, y, dx);
  ops::add_inplace(y, x);
  ops::scale_inplace(y, 2.0f);
  (void)ops::cross_entropy_forward(x, tokens);
  ops::cross_entropy_backward(x, tokens, dl, 1.0f);
  CHECK(ops::flop_count() == 0);
}

TEST_CASE("the FLOP counter is per thread", "[ops][flops]") {
  ops::reset_flop_count();
  ops::add_flops(5);
  std::int64_t other = -1;
  std::thread worker([&] {
    ops::add_flops(1000);
    other = ops::flop_count();
  });
  worker.join();
  CHECK(other == 1000);
  CHECK(ops::flop_count() == 5);
  ops::reset_flop_count();
  CHECK(ops::flop_count() == 0);
}
