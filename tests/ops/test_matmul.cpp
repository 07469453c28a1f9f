// matmul: y = x · wᵀ against the double reference; dx, dw against finite differences.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
// f32 GEMM with inner length K <= 37 and |x|, |w| <= 1: the rounding error of an output is a sum
// of K rounding errors of ~2^-24·|x·w| each, ~√K·2^-24 ≈ 4e-7 of the largest output (measured:
// ~1e-7). 2e-6 leaves margin; a wrong transpose, index or missing term is off by O(1).
constexpr double kTol = 2e-6;
// Finite-difference step: the loss is linear in each input, so central differences in double are
// exact up to cancellation, ~1e-16·|L|/h ≈ 1e-12 here.
constexpr double kStep = 1e-3;
}  // namespace

TEST_CASE("matmul_forward is x · wᵀ, leading dimensions flattened", "[ops][matmul]") {
  const std::int64_t b = 3, t = 5, in = 37, out = 19;
  const Vec x = random_values(b * t * in, 1), w = random_values(out * in, 2);
  Tensor xt = tensor_of(x, {b, t, in}), wt = tensor_of(w, {out, in});
  Tensor y = Tensor::empty({b, t, out});
  ops::matmul_forward(xt, wt, y);
  CHECK(max_rel_error(values_of(y), ref_matmul(x, w, b * t, in, out)) < kTol);
}

TEST_CASE("matmul_backward: dx = dy · w overwritten, dw += dyᵀ · x accumulated", "[ops][matmul]") {
  const std::int64_t n = 13, in = 11, out = 7;
  const Vec x = random_values(n * in, 3), w = random_values(out * in, 4), r = random_values(n * out, 5);
  const Vec dw0 = random_values(out * in, 6);
  auto loss_x = [&](const Vec& xv) { return weighted_sum(r, ref_matmul(xv, w, n, in, out)); };
  auto loss_w = [&](const Vec& wv) { return weighted_sum(r, ref_matmul(x, wv, n, in, out)); };
  const Vec want_dx = fd_gradient(loss_x, x, kStep), want_dw = fd_gradient(loss_w, w, kStep);

  Tensor xt = tensor_of(x, {n, in}), wt = tensor_of(w, {out, in}), dy = tensor_of(r, {n, out});
  Tensor dx = Tensor::empty({n, in});
  dx.fill(NAN);  // overwritten: whatever was there must not leak through
  Tensor dw = tensor_of(dw0, {out, in});
  ops::matmul_backward(dy, xt, wt, dx, dw);
  CHECK(max_rel_error(values_of(dx), want_dx) < kTol);
  Vec dw_added = values_of(dw);
  for (std::size_t i = 0; i < dw_added.size(); ++i) dw_added[i] -= dw0[i];
  CHECK(max_rel_error(dw_added, want_dw) < kTol);

  SECTION("accumulate_dx adds to dx") {
    const Vec dx0 = random_values(n * in, 7);
    Tensor dxa = tensor_of(dx0, {n, in});
    Tensor no_dw;
    ops::matmul_backward(dy, xt, wt, dxa, no_dw, true);
    Vec added = values_of(dxa);
    for (std::size_t i = 0; i < added.size(); ++i) added[i] -= dx0[i];
    CHECK(max_rel_error(added, want_dx) < kTol);
  }
  SECTION("an undefined dx or dw is skipped") {
    Tensor no_dx;
    Tensor dw2 = tensor_of(dw0, {out, in});
    ops::matmul_backward(dy, xt, wt, no_dx, dw2);
    CHECK(values_of(dw2) == values_of(dw));
    Tensor no_dw;
    Tensor dx2 = Tensor::empty({n, in});
    ops::matmul_backward(dy, xt, wt, dx2, no_dw);
    CHECK(values_of(dx2) == values_of(dx));
  }
}
