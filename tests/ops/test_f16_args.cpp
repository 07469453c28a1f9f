// f16 arguments (chapter 14's fp16 recipe): like bf16, every op widens them to f32, computes as
// for f32 and rounds what it stores to nearest even — so with f16-representable inputs each f16
// output is the f32 path's output rounded to f16, within one f16 step (a tie may break either way
// after a different summation order; 0 in practice).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "common/float_formats.hpp"
#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
constexpr DType h = DType::f16;

// Largest distance, in f16 steps, between an f16 output and the f32 result rounded to f16.
int max_steps(const Tensor& got_f16, const Tensor& f32_result) {
  REQUIRE(got_f16.dtype() == h);
  const Vec got = values_of(got_f16), want = rounded(values_of(f32_result), h);
  REQUIRE(got.size() == want.size());
  int worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    // f16 bit patterns of one sign are ordered like their values: the step count is their difference.
    const int a = float_to_f16(static_cast<float>(got[i])), b = float_to_f16(static_cast<float>(want[i]));
    const int d = ((a ^ b) & 0x8000) ? (a & 0x7fff) + (b & 0x7fff) : std::abs(a - b);
    worst = std::max(worst, d);
  }
  return worst;
}

Vec hvals(std::size_t n, std::uint64_t seed) { return random_values(n, seed, -1, 1, h); }
}  // namespace

TEST_CASE("f16 matmul, rmsnorm, swiglu and cross-entropy: the f32 path rounded", "[ops][f16]") {
  const std::int64_t n = 9, in = 13, out = 6;
  const Vec xv = hvals(n * in, 1), wv = hvals(out * in, 2);
  Tensor xf = tensor_of(xv, {n, in}), wf = tensor_of(wv, {out, in}), yf = Tensor::empty({n, out});
  Tensor xh = tensor_of(xv, {n, in}, h), wh = tensor_of(wv, {out, in}, h), yh = Tensor::empty({n, out}, h);
  ops::matmul_forward(xf, wf, yf);
  ops::matmul_forward(xh, wh, yh);
  CHECK(max_steps(yh, yf) <= 1);

  const Vec dyv = hvals(n * out, 3);
  Tensor dyf = tensor_of(dyv, {n, out}), dyh = tensor_of(dyv, {n, out}, h);
  Tensor dxf = Tensor::empty({n, in}), dxh = Tensor::empty({n, in}, h);
  Tensor dwf = Tensor::zeros({out, in}), dwh = Tensor::zeros({out, in}, h);
  ops::matmul_backward(dyf, xf, wf, dxf, dwf);
  ops::matmul_backward(dyh, xh, wh, dxh, dwh);
  CHECK(max_steps(dxh, dxf) <= 1);
  CHECK(max_steps(dwh, dwf) <= 1);

  const Vec nw = hvals(in, 4);
  Tensor nwf = tensor_of(nw, {in}), nwh = tensor_of(nw, {in}, h);
  Tensor of = Tensor::empty({n, in}), oh = Tensor::empty({n, in}, h), rf = Tensor::empty({n}), rh = Tensor::empty({n});
  ops::rmsnorm_forward(xf, nwf, of, rf, 1e-5f);
  ops::rmsnorm_forward(xh, nwh, oh, rh, 1e-5f);
  CHECK(max_steps(oh, of) <= 1);
  CHECK(values_of(rh) == values_of(rf));  // rstd is f32 either way, from the same values

  Tensor zf = Tensor::empty({n, in}), zh = Tensor::empty({n, in}, h);
  ops::swiglu_forward(xf, xf, zf);
  ops::swiglu_forward(xh, xh, zh);
  CHECK(max_steps(zh, zf) <= 1);

  Tensor targets = Tensor::empty({n}, DType::i32);
  for (std::int64_t i = 0; i < n; ++i) targets.data<std::int32_t>()[i] = static_cast<std::int32_t>((3 * i) % in);
  CHECK(ops::cross_entropy_forward(xh, targets) == ops::cross_entropy_forward(xf, targets));
}
