// bf16 arguments: every op widens them to f32, computes exactly as for f32 arguments, and rounds
// its outputs to nearest even. So with bf16-representable inputs, each bf16 output must be the
// f32 path's output rounded to bf16: within 1 bf16 step (0 in practice; the step allows for a
// tie-breaking difference), and accumulating outputs round the f32 sum once.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
constexpr DType bf = DType::bf16;

// Largest distance in bf16 steps between a bf16 output and the f32 output rounded to bf16.
int max_ulps(const Tensor& got_bf16, const Tensor& f32_result) {
  REQUIRE(got_bf16.dtype() == bf);
  const Vec got = values_of(got_bf16), want = rounded(values_of(f32_result), bf);
  REQUIRE(got.size() == want.size());
  int worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, bf16_ulps_apart(static_cast<float>(got[i]), static_cast<float>(want[i])));
  return worst;
}

// The same values in an f32 and in a bf16 tensor (values must be bf16-representable).
struct Pair {
  Tensor f, b;
};
Pair pair_of(const Vec& v, const Shape& s) { return {tensor_of(v, s), tensor_of(v, s, bf)}; }
Pair pair_empty(const Shape& s) { return {Tensor::empty(s), Tensor::empty(s, bf)}; }
Vec bvals(std::size_t n, std::uint64_t seed, double lo = -1, double hi = 1) {
  return random_values(n, seed, lo, hi, bf);
}
}  // namespace

TEST_CASE("bf16 matmul: forward, backward, mixed dtypes", "[ops][bf16]") {
  const std::int64_t n = 9, in = 13, out = 6;
  Pair x = pair_of(bvals(n * in, 1), {n, in}), w = pair_of(bvals(out * in, 2), {out, in});
  Pair y = pair_empty({n, out});
  ops::matmul_forward(x.f, w.f, y.f);
  ops::matmul_forward(x.b, w.b, y.b);
  CHECK(max_ulps(y.b, y.f) <= 1);

  Pair dy = pair_of(bvals(n * out, 3), {n, out}), dx = pair_empty({n, in});
  const Vec dw0 = bvals(out * in, 4);
  Pair dw = pair_of(dw0, {out, in});
  ops::matmul_backward(dy.f, x.f, w.f, dx.f, dw.f);
  ops::matmul_backward(dy.b, x.b, w.b, dx.b, dw.b);
  CHECK(max_ulps(dx.b, dx.f) <= 1);
  CHECK(max_ulps(dw.b, dw.f) <= 1);  // round(dw0 + dyᵀ·x), rounded once

  // Mixed: bf16 x with f32 w and y computes on the same values as the all-f32 call.
  Tensor y_mixed = Tensor::empty({n, out});
  ops::matmul_forward(x.b, w.f, y_mixed);
  CHECK(values_of(y_mixed) == values_of(y.f));
}

TEST_CASE("bf16 embedding, rmsnorm, rope, swiglu, element-wise", "[ops][bf16]") {
  const std::int64_t n = 5, c = 12;
  SECTION("embedding") {
    Tensor tokens = int_tensor({4, 0, 4, 2, 1}, {n});
    Pair table = pair_of(bvals(6 * c, 11), {6, c}), out = pair_empty({n, c});
    ops::embedding_forward(tokens, table.f, out.f);
    ops::embedding_forward(tokens, table.b, out.b);
    CHECK(max_ulps(out.b, out.f) == 0);
    Tensor out_f_from_b = Tensor::empty({n, c});  // bf16 table into an f32 output: exact widening
    ops::embedding_forward(tokens, table.b, out_f_from_b);
    CHECK(values_of(out_f_from_b) == values_of(out.f));
    Pair dtable = pair_of(bvals(6 * c, 12), {6, c});
    ops::embedding_backward(tokens, out.f, dtable.f);
    ops::embedding_backward(tokens, out.b, dtable.b);
    CHECK(max_ulps(dtable.b, dtable.f) <= 1);
  }
  SECTION("rmsnorm") {
    Pair x = pair_of(bvals(n * c, 13, -2, 2), {n, c}), w = pair_of(bvals(c, 14, 0.5, 1.5), {c});
    Pair y = pair_empty({n, c});
    Tensor rstd_f = Tensor::empty({n}), rstd_b = Tensor::empty({n});
    ops::rmsnorm_forward(x.f, w.f, y.f, rstd_f, 1e-5f);
    ops::rmsnorm_forward(x.b, w.b, y.b, rstd_b, 1e-5f);
    CHECK(max_ulps(y.b, y.f) <= 1);
    CHECK(values_of(rstd_b) == values_of(rstd_f));  // rstd is f32 either way
    Pair dy = pair_of(bvals(n * c, 15), {n, c}), dx = pair_of(bvals(n * c, 16), {n, c});
    Pair dw = pair_of(bvals(c, 17), {c});
    ops::rmsnorm_backward(dy.f, x.f, w.f, rstd_f, dx.f, dw.f);
    ops::rmsnorm_backward(dy.b, x.b, w.b, rstd_b, dx.b, dw.b);
    CHECK(max_ulps(dx.b, dx.f) <= 1);
    CHECK(max_ulps(dw.b, dw.f) <= 1);
  }
  SECTION("rope") {
    Pair x = pair_of(bvals(2 * 3 * 2 * 8, 18), {2, 3, 2, 8});
    ops::rope_forward(x.f, 10000.0);
    ops::rope_forward(x.b, 10000.0);
    CHECK(max_ulps(x.b, x.f) <= 1);
    Pair g = pair_of(bvals(2 * 3 * 2 * 8, 19), {2, 3, 2, 8});
    ops::rope_backward(g.f, 10000.0);
    ops::rope_backward(g.b, 10000.0);
    CHECK(max_ulps(g.b, g.f) <= 1);
  }
  SECTION("swiglu") {
    Pair g = pair_of(bvals(n * c, 20, -5, 5), {n, c}), u = pair_of(bvals(n * c, 21), {n, c});
    Pair z = pair_empty({n, c});
    ops::swiglu_forward(g.f, u.f, z.f);
    ops::swiglu_forward(g.b, u.b, z.b);
    CHECK(max_ulps(z.b, z.f) <= 1);
    Pair dz = pair_of(bvals(n * c, 22), {n, c}), dg = pair_empty({n, c}), du = pair_empty({n, c});
    ops::swiglu_backward(dz.f, g.f, u.f, dg.f, du.f);
    ops::swiglu_backward(dz.b, g.b, u.b, dg.b, du.b);
    CHECK(max_ulps(dg.b, dg.f) <= 1);
    CHECK(max_ulps(du.b, du.f) <= 1);
  }
  SECTION("add_inplace and scale_inplace") {
    Pair y = pair_of(bvals(n * c, 23), {n, c}), x = pair_of(bvals(n * c, 24), {n, c});
    ops::add_inplace(y.f, x.f);
    ops::add_inplace(y.b, x.b);
    CHECK(max_ulps(y.b, y.f) <= 1);
    Pair z = pair_of(bvals(n * c, 25), {n, c});
    ops::scale_inplace(z.f, 0.3f);
    ops::scale_inplace(z.b, 0.3f);
    CHECK(max_ulps(z.b, z.f) <= 1);
  }
}

TEST_CASE("bf16 attention: out and probs rounded; backward from bf16 or recomputed probs", "[ops][bf16]") {
  const std::int64_t b = 2, t = 67, h = 4, g = 2, d = 8;
  Pair q = pair_of(bvals(b * t * h * d, 31, -1.5, 1.5), {b, t, h, d});
  Pair k = pair_of(bvals(b * t * g * d, 32, -1.5, 1.5), {b, t, g, d});
  Pair v = pair_of(bvals(b * t * g * d, 33), {b, t, g, d});
  Pair out = pair_empty({b, t, h, d}), probs = pair_empty({b, h, t, t});
  ops::attention_forward(q.f, k.f, v.f, out.f, probs.f);
  ops::attention_forward(q.b, k.b, v.b, out.b, probs.b);
  CHECK(max_ulps(out.b, out.f) <= 1);
  CHECK(max_ulps(probs.b, probs.f) <= 1);

  // bf16 backward, from the saved bf16 probs and recomputed (which rounds them to q's dtype, as
  // a saved tensor would be): the f32 backward given an f32 probs holding the rounded values,
  // rounded; and recomputation changes no bit.
  Pair dout = pair_of(bvals(b * t * h * d, 34), {b, t, h, d});
  Tensor probs_rounded = tensor_of(values_of(probs.b), {b, h, t, t});
  Pair dq = pair_empty({b, t, h, d}), dk = pair_empty({b, t, g, d}), dv = pair_empty({b, t, g, d});
  ops::attention_backward(dout.f, q.f, k.f, v.f, probs_rounded, dq.f, dk.f, dv.f);
  ops::attention_backward(dout.b, q.b, k.b, v.b, probs.b, dq.b, dk.b, dv.b);
  CHECK(max_ulps(dq.b, dq.f) <= 1);
  CHECK(max_ulps(dk.b, dk.f) <= 1);
  CHECK(max_ulps(dv.b, dv.f) <= 1);

  Tensor none, dq_re = Tensor::empty({b, t, h, d}, bf), dk_re = Tensor::empty({b, t, g, d}, bf),
               dv_re = Tensor::empty({b, t, g, d}, bf);
  ops::attention_backward(dout.b, q.b, k.b, v.b, none, dq_re, dk_re, dv_re);
  CHECK(values_of(dq_re) == values_of(dq.b));
  CHECK(values_of(dk_re) == values_of(dk.b));
  CHECK(values_of(dv_re) == values_of(dv.b));
}

TEST_CASE("bf16 cross-entropy", "[ops][bf16]") {
  const std::int64_t n = 6, v = 40;
  Pair logits = pair_of(bvals(n * v, 41, -4, 4), {n, v});
  Tensor targets = int_tensor({0, 39, 7, 7, 20, 1}, {n});
  CHECK(ops::cross_entropy_forward(logits.b, targets) == ops::cross_entropy_forward(logits.f, targets));
  Pair dl = pair_empty({n, v});
  ops::cross_entropy_backward(logits.f, targets, dl.f, 2.0f);
  ops::cross_entropy_backward(logits.b, targets, dl.b, 2.0f);
  CHECK(max_ulps(dl.b, dl.f) <= 1);
}
