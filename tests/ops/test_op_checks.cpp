// The ops' contract beyond the numbers: wrong dtypes and shapes throw usp::Error naming the
// shapes, f32 arguments are used in place (no scratch), and
// the scratch an op does need is exactly what it documents and is freed.
#include <catch2/catch.hpp>

#include "common/memory_tracker.hpp"
#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
std::int64_t temporary_now() { return MemoryTracker::instance().current()[MemCategory::Temporary]; }

// Peak Temporary bytes that fn allocates beyond what is in use when it starts; also checks that
// it frees them all.
template <class Fn> std::int64_t scratch_bytes(Fn&& fn) {
  const std::int64_t before = temporary_now();
  MemoryTracker::instance().reset_peak();
  fn();
  CHECK(temporary_now() == before);
  return MemoryTracker::instance().peak()[MemCategory::Temporary] - before;
}

Tensor act(const Shape& s, std::uint64_t seed, DType dtype = DType::f32) {
  return tensor_of(random_values(static_cast<std::size_t>(shape_numel(s)), seed), s, dtype);
}
}  // namespace

TEST_CASE("wrong shapes and dtypes throw usp::Error naming them", "[ops][checks]") {
  Tensor x = act({4, 6}, 1), w = act({3, 5}, 2), y = act({4, 3}, 3);
  CHECK_THROWS_WITH(ops::matmul_forward(x, w, y), Catch::Contains("[4, 6]") && Catch::Contains("[3, 5]"));
  Tensor w_ok = act({3, 6}, 4), y_bad = act({4, 4}, 5);
  CHECK_THROWS_WITH(ops::matmul_forward(x, w_ok, y_bad), Catch::Contains("[4, 4]") && Catch::Contains("[4, 3]"));
  Tensor x_int = Tensor::zeros({4, 6}, DType::i32);
  CHECK_THROWS_WITH(ops::matmul_forward(x_int, w_ok, y), Catch::Contains("i32") && Catch::Contains("f32, bf16 or f16"));
  Tensor x_fp8 = Tensor::zeros({4, 6}, DType::e4m3);  // storage only: no op computes on fp8
  CHECK_THROWS_WITH(ops::matmul_forward(x_fp8, w_ok, y), Catch::Contains("e4m3"));

  Tensor rstd_bf16 = Tensor::empty({4}, DType::bf16), w6 = act({6}, 6), y6 = act({4, 6}, 7);
  CHECK_THROWS_AS(ops::rmsnorm_forward(x, w6, y6, rstd_bf16, 1e-5f), Error);
  Tensor rstd_short = Tensor::empty({3});
  CHECK_THROWS_WITH(ops::rmsnorm_forward(x, w6, y6, rstd_short, 1e-5f), Catch::Contains("[3]"));

  Tensor q = act({1, 5, 3, 4}, 8), k = act({1, 5, 2, 4}, 9), out = act({1, 5, 3, 4}, 10), none;
  CHECK_THROWS_WITH(ops::attention_forward(q, k, k, out, none), Catch::Contains("[1, 5, 2, 4]"));  // 2 ∤ 3
  Tensor k1 = act({1, 5, 1, 4}, 11), probs_bad = Tensor::empty({1, 3, 5, 4});
  CHECK_THROWS_WITH(ops::attention_forward(q, k1, k1, out, probs_bad), Catch::Contains("[1, 3, 5, 4]"));
  Tensor odd = act({1, 2, 1, 3}, 12);
  CHECK_THROWS_AS(ops::rope_forward(odd, 10000.0), Error);  // D must be even
  Tensor g = act({2, 3}, 13), u = act({3, 2}, 14), z = act({2, 3}, 15);
  CHECK_THROWS_AS(ops::swiglu_forward(g, u, z), Error);
  Tensor tokens_f32 = act({2}, 16), table = act({4, 3}, 17), emb = act({2, 3}, 18);
  CHECK_THROWS_WITH(ops::embedding_forward(tokens_f32, table, emb), Catch::Contains("expected i32"));
}

TEST_CASE("f32 arguments are used in place; scratch is what each op documents, then freed", "[ops][checks]") {
  const std::int64_t n = 6, c = 8, b = 2, t = 5, h = 4, g = 2, d = 4;
  Tensor x = act({n, c}, 21), w = act({c, c}, 22), y = act({n, c}, 23), dx = act({n, c}, 24),
         dw = act({c, c}, 25), wn = act({c}, 26), rstd = Tensor::empty({n}), dwn = act({c}, 27);
  Tensor tokens = int_tensor({0, 1, 2, 3, 4, 5}, {n});
  CHECK(scratch_bytes([&] { ops::matmul_forward(x, w, y); }) == 0);
  CHECK(scratch_bytes([&] { ops::matmul_backward(y, x, w, dx, dw); }) == 0);
  CHECK(scratch_bytes([&] { ops::rmsnorm_forward(x, wn, y, rstd, 1e-5f); }) == 0);
  CHECK(scratch_bytes([&] { ops::rmsnorm_backward(y, x, wn, rstd, dx, dwn); }) == 0);
  CHECK(scratch_bytes([&] { ops::swiglu_forward(x, y, dx); }) == 0);
  Tensor du = act({n, c}, 20);
  CHECK(scratch_bytes([&] { ops::swiglu_backward(x, y, x, dx, du); }) == 0);
  CHECK(scratch_bytes([&] { ops::embedding_forward(tokens, w, y); }) == 0);
  CHECK(scratch_bytes([&] { ops::embedding_backward(tokens, y, dw); }) == 0);
  CHECK(scratch_bytes([&] { ops::add_inplace(y, x); }) == 0);
  CHECK(scratch_bytes([&] { ops::scale_inplace(y, 0.5f); }) == 0);
  CHECK(scratch_bytes([&] { (void)ops::cross_entropy_forward(x, tokens); }) == 0);
  CHECK(scratch_bytes([&] { ops::cross_entropy_backward(x, tokens, dx, 1.0f); }) == 0);

  Tensor x4 = act({b, t, h, d}, 28);
  CHECK(scratch_bytes([&] { ops::rope_forward(x4, 10000.0); }) == t * d * 4);  // cos, sin [T, D/2]

  Tensor q = act({b, t, h, d}, 29), k = act({b, t, g, d}, 30), v = act({b, t, g, d}, 31);
  Tensor out = act({b, t, h, d}, 32), probs = Tensor::empty({b, h, t, t}), none;
  Tensor dq = act({b, t, h, d}, 33), dk = act({b, t, g, d}, 34), dv = act({b, t, g, d}, 35);
  const std::int64_t head_probs = t * t * 4;  // one (batch, head)'s [T, T] in f32
  CHECK(scratch_bytes([&] { ops::attention_forward(q, k, v, out, probs); }) == 0);
  CHECK(scratch_bytes([&] { ops::attention_forward(q, k, v, out, none); }) == head_probs);
  CHECK(scratch_bytes([&] { ops::attention_backward(out, q, k, v, probs, dq, dk, dv); }) == head_probs);
  CHECK(scratch_bytes([&] { ops::attention_backward(out, q, k, v, none, dq, dk, dv); }) == 2 * head_probs);

  SECTION("bf16 arguments are widened into Temporaries, released at the end") {
    Tensor xb = act({n, c}, 36, DType::bf16), wb = act({c, c}, 37, DType::bf16), yb = act({n, c}, 38, DType::bf16);
    CHECK(scratch_bytes([&] { ops::matmul_forward(xb, wb, yb); }) == (n * c + c * c + n * c) * 4);
  }
}
