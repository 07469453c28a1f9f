// RoPE (rotate-half): the double reference, a hand-computed rotation, and the backward as the
// transpose (finite differences of Σ r·rope(x)).
#include <catch2/catch.hpp>

#include <cmath>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
// Each output is x·cos ± x'·sin with the cos/sin rounded once to f32 from double: a few 2^-24
// relative (~2e-7 of the largest value; measured ~1e-7). 1e-6 keeps margin; using t+1 for the
// position, the interleaved (non-HF) pairing or the wrong frequency exponent is off by O(0.1).
constexpr double kTol = 1e-6;
}  // namespace

TEST_CASE("rope_forward rotates the halves of each head by t · theta^(-2i/D)", "[ops][rope]") {
  SECTION("by hand: D = 2, position 1, angle 1 rad") {
    Tensor x = tensor_of({1, 0, 0, 1}, {1, 2, 1, 2});  // positions 0 and 1
    ops::rope_forward(x, 10000.0);
    const Vec got = values_of(x);
    CHECK(got[0] == 1.0);  // position 0: no rotation
    CHECK(got[1] == 0.0);
    CHECK(got[2] == Approx(-std::sin(1.0)).margin(1e-7));  // (0, 1) -> (-sin 1, cos 1)
    CHECK(got[3] == Approx(std::cos(1.0)).margin(1e-7));
  }
  SECTION("against the reference, B = 2, T = 9, H = 3, D = 10") {
    const std::int64_t b = 2, t = 9, h = 3, d = 10;
    const Vec x = random_values(b * t * h * d, 31);
    Tensor xt = tensor_of(x, {b, t, h, d});
    ops::rope_forward(xt, 500000.0);
    CHECK(max_rel_error(values_of(xt), ref_rope(x, b, t, h, d, 500000.0)) < kTol);
  }
}

TEST_CASE("rope_backward is the transposed rotation", "[ops][rope]") {
  const std::int64_t b = 2, t = 5, h = 2, d = 6;
  const double theta = 10000.0;
  const Vec x = random_values(b * t * h * d, 32), r = random_values(b * t * h * d, 33);
  auto loss = [&](const Vec& xv) { return weighted_sum(r, ref_rope(xv, b, t, h, d, theta)); };
  // Linear in x: central differences exact up to ~1e-16·|L|/h.
  const Vec want = fd_gradient(loss, x, 1e-3);
  Tensor g = tensor_of(r, {b, t, h, d});
  ops::rope_backward(g, theta);
  CHECK(max_rel_error(values_of(g), want) < kTol);

  SECTION("forward then backward gives back the input") {
    Tensor xt = tensor_of(x, {b, t, h, d});
    ops::rope_forward(xt, theta);
    ops::rope_backward(xt, theta);
    CHECK(max_rel_error(values_of(xt), x) < kTol);
  }
}

TEST_CASE("rope at given positions rotates each token as in the whole sequence (context parallelism)",
          "[ops][rope]") {
  // A rank holding tokens 6, 7, 0, 1 of an 8-token sequence (zig-zag over 2 ranks, chunks 3 and 0):
  // rotated at those positions, they equal those rows of the whole sequence rotated; backward too.
  const std::int64_t b = 2, t = 8, h = 3, d = 6;
  const std::vector<std::int32_t> mine = {6, 7, 0, 1};
  const std::int64_t n = static_cast<std::int64_t>(mine.size());
  const Vec x = random_values(b * t * h * d, 77);
  const Vec whole = ref_rope(x, b, t, h, d, 10000.0), whole_back = ref_rope(x, b, t, h, d, 10000.0, true);
  Vec sub, want, want_back;
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int32_t p : mine)
      for (std::int64_t e = 0; e < h * d; ++e) {
        const std::size_t i = static_cast<std::size_t>((bi * t + p) * h * d + e);
        sub.push_back(x[i]);
        want.push_back(whole[i]);
        want_back.push_back(whole_back[i]);
      }
  const Tensor positions = int_tensor(mine, {n});
  Tensor fwd = tensor_of(sub, {b, n, h, d}), back = tensor_of(sub, {b, n, h, d});
  ops::rope_forward(fwd, 10000.0, positions);
  ops::rope_backward(back, 10000.0, positions);
  CHECK(max_rel_error(values_of(fwd), want) < kTol);
  CHECK(max_rel_error(values_of(back), want_back) < kTol);
  // A negative position, or one per token missing, is refused.
  CHECK_THROWS_WITH(ops::rope_forward(fwd, 10000.0, int_tensor({0, 1, -1, 2}, {4})), Catch::Contains("is negative"));
  CHECK_THROWS(ops::rope_forward(fwd, 10000.0, int_tensor({0, 1}, {2})));
}
