// RMSNorm against the double reference; dx_acc and dw (both accumulated) against finite
// differences.
#include <catch2/catch.hpp>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
// Rows of C <= 70 values: the f32 mean of squares is off by ~√C·2^-24 ≈ 5e-7 relative, the f32
// product x·r·w by a few 2^-24 (measured: ~1e-7 of the largest output). 2e-6 keeps margin; a
// missing term of the backward is off by O(0.1), and with eps = 1e-2 (mean x² ≈ 1.3) a dropped
// or misplaced eps by ~4e-3.
constexpr double kTol = 2e-6;
// Finite-difference step in double: the truncation error h²/6·|f'''| (f''' = O(1) for inputs of
// order 1) is ~2e-11 and the cancellation ~1e-16·|L|/h ~1e-11, far below kTol.
constexpr double kStep = 1e-5;
constexpr float kEps = 1e-2f;
}  // namespace

TEST_CASE("rmsnorm_forward normalises rows and scales by w; rstd is f32", "[ops][rmsnorm]") {
  const std::int64_t b = 2, t = 7, c = 70;
  const Vec x = random_values(b * t * c, 21, -2, 2), w = random_values(c, 22, 0.5, 1.5);
  Tensor y = Tensor::empty({b, t, c}), rstd = Tensor::empty({b * t});
  ops::rmsnorm_forward(tensor_of(x, {b, t, c}), tensor_of(w, {c}), y, rstd, kEps);
  Vec want_rstd;
  const Vec want = ref_rmsnorm(x, w, b * t, c, kEps, &want_rstd);
  CHECK(max_rel_error(values_of(y), want) < kTol);
  CHECK(max_rel_error(values_of(rstd), want_rstd) < kTol);
}

TEST_CASE("rmsnorm_backward accumulates into dx_acc and dw", "[ops][rmsnorm]") {
  const std::int64_t n = 6, c = 13;
  const float eps = kEps;
  const Vec x = random_values(n * c, 23, -2, 2), w = random_values(c, 24, 0.5, 1.5);
  const Vec r = random_values(n * c, 25), dx0 = random_values(n * c, 26), dw0 = random_values(c, 27);
  auto loss_x = [&](const Vec& xv) { return weighted_sum(r, ref_rmsnorm(xv, w, n, c, eps)); };
  auto loss_w = [&](const Vec& wv) { return weighted_sum(r, ref_rmsnorm(x, wv, n, c, eps)); };
  const Vec want_dx = fd_gradient(loss_x, x, kStep), want_dw = fd_gradient(loss_w, w, kStep);

  Tensor xt = tensor_of(x, {n, c}), wt = tensor_of(w, {c});
  Tensor y = Tensor::empty({n, c}), rstd = Tensor::empty({n});
  ops::rmsnorm_forward(xt, wt, y, rstd, eps);
  Tensor dx = tensor_of(dx0, {n, c}), dw = tensor_of(dw0, {c});
  ops::rmsnorm_backward(tensor_of(r, {n, c}), xt, wt, rstd, dx, dw);
  Vec got_dx = values_of(dx), got_dw = values_of(dw);
  for (std::size_t i = 0; i < got_dx.size(); ++i) got_dx[i] -= dx0[i];
  for (std::size_t i = 0; i < got_dw.size(); ++i) got_dw[i] -= dw0[i];
  CHECK(max_rel_error(got_dx, want_dx) < kTol);
  CHECK(max_rel_error(got_dw, want_dw) < kTol);
}
