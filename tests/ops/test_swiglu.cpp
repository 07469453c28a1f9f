// SwiGLU: z = silu(g) · u against the double reference; dg, du (overwritten) against finite
// differences.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
// Element-wise: the f32 sigmoid (exp to ~2 ulp, one division) and two products carry a few
// 2^-24 of relative error each: ~5e-7 of the largest output at most (measured ~1e-7). 2e-6
// keeps margin; a wrong derivative term is off by O(0.1).
constexpr double kTol = 2e-6;
// Double-precision central differences with h = 1e-5: truncation h²/6·|f'''| ~ 1e-10 for
// |g| <= 6, cancellation ~1e-16·|L|/h ~ 1e-10.
constexpr double kStep = 1e-5;
}  // namespace

TEST_CASE("swiglu_forward is silu(g) · u", "[ops][swiglu]") {
  const std::int64_t n = 5, f = 37;
  const Vec g = random_values(n * f, 41, -6, 6), u = random_values(n * f, 42, -2, 2);
  Tensor z = Tensor::empty({n, f});
  ops::swiglu_forward(tensor_of(g, {n, f}), tensor_of(u, {n, f}), z);
  CHECK(max_rel_error(values_of(z), ref_swiglu(g, u)) < kTol);

  SECTION("saturates cleanly for large |g|") {
    Tensor big = tensor_of({-200, -90, 90, 200}, {4}), one = tensor_of({1, 1, 1, 1}, {4});
    Tensor zb = Tensor::empty({4});
    ops::swiglu_forward(big, one, zb);
    const Vec got = values_of(zb);
    CHECK(std::abs(got[0]) < 1e-30);
    CHECK(std::abs(got[1]) < 1e-30);
    CHECK(got[2] == 90.0);
    CHECK(got[3] == 200.0);
  }
}

TEST_CASE("swiglu_backward overwrites dg and du", "[ops][swiglu]") {
  const std::int64_t n = 4, f = 11;
  const Vec g = random_values(n * f, 43, -6, 6), u = random_values(n * f, 44, -2, 2);
  const Vec r = random_values(n * f, 45);
  auto loss_g = [&](const Vec& gv) { return weighted_sum(r, ref_swiglu(gv, u)); };
  auto loss_u = [&](const Vec& uv) { return weighted_sum(r, ref_swiglu(g, uv)); };
  Tensor dg = Tensor::empty({n, f}), du = Tensor::empty({n, f});
  dg.fill(NAN);
  du.fill(NAN);
  ops::swiglu_backward(tensor_of(r, {n, f}), tensor_of(g, {n, f}), tensor_of(u, {n, f}), dg, du);
  CHECK(max_rel_error(values_of(dg), fd_gradient(loss_g, g, kStep)) < kTol);
  CHECK(max_rel_error(values_of(du), fd_gradient(loss_u, u, kStep)) < kTol);
}
