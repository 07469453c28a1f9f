// One block of causal attention at given positions (attention_block_forward/backward): the whole
// sequence as one block is causal attention; keys split into blocks give partial results whose
// log-sum-exp merge is the whole (the rule context parallelism relies on); a query that sees no
// key of a block gets lse = -inf and out = 0; the backward, from the gradients of out and lse,
// against finite differences, at shuffled (zig-zag) positions with GQA.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
// As for attention_forward (test_attention.cpp): f32 dot products, exp and sums over <= 16 keys,
// ~1e-6 of the largest output at most (measured ~3e-7); a wrong mask, kv head or scale is O(0.1).
constexpr double kTol = 3e-6;
constexpr double kStep = 1e-5;  // central differences in double (see test_attention.cpp)

struct BlockOut {
  Vec out, lse;
};

BlockOut block_forward(const Vec& q, const Vec& k, const Vec& v, const std::vector<std::int32_t>& qp,
                       const std::vector<std::int32_t>& kp, std::int64_t b, std::int64_t h, std::int64_t g,
                       std::int64_t d) {
  const std::int64_t tq = static_cast<std::int64_t>(qp.size()), tk = static_cast<std::int64_t>(kp.size());
  Tensor out = Tensor::empty({b, tq, h, d}), lse = Tensor::empty({b, h, tq});
  ops::attention_block_forward(tensor_of(q, {b, tq, h, d}), tensor_of(k, {b, tk, g, d}), tensor_of(v, {b, tk, g, d}),
                               int_tensor(qp, {tq}), int_tensor(kp, {tk}), out, lse);
  return {values_of(out), values_of(lse)};
}

// Rows [first, first + n) of a [B, T, X] array (X values per token).
Vec token_rows(const Vec& a, std::int64_t b, std::int64_t t, std::int64_t x, std::int64_t first, std::int64_t n) {
  Vec out;
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t i = first; i < first + n; ++i)
      for (std::int64_t e = 0; e < x; ++e) out.push_back(a[static_cast<std::size_t>((bi * t + i) * x + e)]);
  return out;
}

// The double-precision reference of attention_block_forward, straight from its formulas.
BlockOut ref_block(const Vec& q, const Vec& k, const Vec& v, const std::vector<std::int32_t>& qp,
                   const std::vector<std::int32_t>& kp, std::int64_t b, std::int64_t h, std::int64_t g, std::int64_t d) {
  const std::int64_t tq = static_cast<std::int64_t>(qp.size()), tk = static_cast<std::int64_t>(kp.size());
  BlockOut o{Vec(static_cast<std::size_t>(b * tq * h * d), 0.0), Vec(static_cast<std::size_t>(b * h * tq))};
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t hq = 0; hq < h; ++hq)
      for (std::int64_t i = 0; i < tq; ++i) {
        const std::int64_t hk = hq / (h / g);
        Vec s(static_cast<std::size_t>(tk), -std::numeric_limits<double>::infinity());
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < tk; ++j) {
          if (kp[static_cast<std::size_t>(j)] > qp[static_cast<std::size_t>(i)]) continue;
          double dot = 0;
          for (std::int64_t e = 0; e < d; ++e)
            dot += q[static_cast<std::size_t>(((bi * tq + i) * h + hq) * d + e)] *
                   k[static_cast<std::size_t>(((bi * tk + j) * g + hk) * d + e)];
          s[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
          m = std::max(m, s[static_cast<std::size_t>(j)]);
        }
        double& l = o.lse[static_cast<std::size_t>((bi * h + hq) * tq + i)];
        if (m == -std::numeric_limits<double>::infinity()) {
          l = m;
          continue;
        }
        double sum = 0;
        for (double x : s) sum += std::exp(x - m);
        l = m + std::log(sum);
        for (std::int64_t j = 0; j < tk; ++j)
          for (std::int64_t e = 0; e < d; ++e)
            o.out[static_cast<std::size_t>(((bi * tq + i) * h + hq) * d + e)] +=
                std::exp(s[static_cast<std::size_t>(j)] - l) * v[static_cast<std::size_t>(((bi * tk + j) * g + hk) * d + e)];
      }
  return o;
}

}  // namespace

TEST_CASE("attention_block: the whole sequence as one block is causal attention", "[ops][attention]") {
  const std::int64_t b = 2, t = 11, h = 4, g = 2, d = 8;
  const Vec q = random_values(b * t * h * d, 1, -1.5, 1.5), k = random_values(b * t * g * d, 2, -1.5, 1.5),
            v = random_values(b * t * g * d, 3);
  const BlockOut got = block_forward(q, k, v, iota_positions(t), iota_positions(t), b, h, g, d);
  CHECK(max_rel_error(got.out, ref_attention(q, k, v, b, t, h, g, d)) < kTol);
  for (double l : got.lse) CHECK(std::isfinite(l));  // every query sees at least itself
}

TEST_CASE("attention_block: partial results over key blocks merge by their log-sum-exp", "[ops][attention]") {
  // Queries at positions 4..7 of an 8-token sequence; keys in two blocks, 0..3 and 4..7.
  const std::int64_t b = 1, h = 2, g = 1, d = 4, t = 8, tq = 4;
  const Vec q_all = random_values(b * t * h * d, 11, -1.5, 1.5), k = random_values(b * t * g * d, 12, -1.5, 1.5),
            v = random_values(b * t * g * d, 13);
  const Vec q = token_rows(q_all, b, t, h * d, 4, tq);
  const Vec want = token_rows(ref_attention(q_all, k, v, b, t, h, g, d), b, t, h * d, 4, tq);
  const BlockOut first = block_forward(q, token_rows(k, b, t, g * d, 0, 4), token_rows(v, b, t, g * d, 0, 4),
                                       iota_positions(tq, 4), iota_positions(4, 0), b, h, g, d);
  const BlockOut second = block_forward(q, token_rows(k, b, t, g * d, 4, 4), token_rows(v, b, t, g * d, 4, 4),
                                        iota_positions(tq, 4), iota_positions(4, 4), b, h, g, d);
  // lse = log(e^lse1 + e^lse2); out = Σ e^(lse_i - lse) · out_i (the merge written out here).
  Vec merged(want.size());
  for (std::int64_t hi = 0; hi < h; ++hi)
    for (std::int64_t i = 0; i < tq; ++i) {
      const std::size_t r = static_cast<std::size_t>(hi * tq + i);
      const double l = std::log(std::exp(first.lse[r]) + std::exp(second.lse[r]));
      for (std::int64_t e = 0; e < d; ++e) {
        const std::size_t o = static_cast<std::size_t>((i * h + hi) * d + e);
        merged[o] = std::exp(first.lse[r] - l) * first.out[o] + std::exp(second.lse[r] - l) * second.out[o];
      }
    }
  CHECK(max_rel_error(merged, want) < kTol);
}

TEST_CASE("attention_block: a query that sees no key of the block gets lse -inf and out 0", "[ops][attention]") {
  const std::int64_t b = 1, h = 2, g = 2, d = 4;
  // Queries at 0 and 5; keys at 3, 4: query 0 sees none, query 5 sees both.
  const BlockOut got = block_forward(random_values(2 * h * d, 21), random_values(2 * g * d, 22),
                                     random_values(2 * g * d, 23), {0, 5}, {3, 4}, b, h, g, d);
  for (std::int64_t hi = 0; hi < h; ++hi) {
    CHECK(got.lse[static_cast<std::size_t>(hi * 2)] == -std::numeric_limits<double>::infinity());
    CHECK(std::isfinite(got.lse[static_cast<std::size_t>(hi * 2 + 1)]));
    for (std::int64_t e = 0; e < d; ++e) CHECK(got.out[static_cast<std::size_t>(hi * d + e)] == 0.0);
  }
}

TEST_CASE("attention_block_backward matches finite differences of Σ r·out + Σ ρ·lse", "[ops][attention]") {
  // Zig-zag-like positions: queries at 6, 7, 0, 1; keys at 1, 2, 6, 7 (query 0 sees no key).
  const std::int64_t b = 2, h = 4, g = 2, d = 4, tq = 4, tk = 4;
  const std::vector<std::int32_t> qp = {6, 7, 0, 1}, kp = {1, 2, 6, 7};
  const Vec q = random_values(b * tq * h * d, 31, -1.5, 1.5), k = random_values(b * tk * g * d, 32, -1.5, 1.5),
            v = random_values(b * tk * g * d, 33);
  const Vec r = random_values(b * tq * h * d, 34), rho = random_values(b * h * tq, 35);
  // The op's forward against the reference at these positions, then the gradients against finite
  // differences of the double reference.
  const BlockOut want = ref_block(q, k, v, qp, kp, b, h, g, d), got = block_forward(q, k, v, qp, kp, b, h, g, d);
  CHECK(max_rel_error(got.out, want.out) < kTol);
  auto loss = [&](const Vec& qq, const Vec& kk, const Vec& vv) {
    const BlockOut o = ref_block(qq, kk, vv, qp, kp, b, h, g, d);
    double l = weighted_sum(r, o.out);
    for (std::size_t i = 0; i < rho.size(); ++i)
      if (std::isfinite(o.lse[i])) l += rho[i] * o.lse[i];  // rows that see nothing have no lse to move
    return l;
  };
  const BlockOut o = block_forward(q, k, v, qp, kp, b, h, g, d);
  Tensor dq = Tensor::zeros({b, tq, h, d}), dk = Tensor::zeros({b, tk, g, d}), dv = Tensor::zeros({b, tk, g, d});
  ops::attention_block_backward(tensor_of(r, {b, tq, h, d}), tensor_of(rho, {b, h, tq}), tensor_of(q, {b, tq, h, d}),
                                tensor_of(k, {b, tk, g, d}), tensor_of(v, {b, tk, g, d}), int_tensor(qp, {tq}),
                                int_tensor(kp, {tk}), tensor_of(o.out, {b, tq, h, d}), tensor_of(o.lse, {b, h, tq}),
                                dq, dk, dv);
  CHECK(max_rel_error(values_of(dq), fd_gradient([&](const Vec& x) { return loss(x, k, v); }, q, kStep)) < kTol);
  CHECK(max_rel_error(values_of(dk), fd_gradient([&](const Vec& x) { return loss(q, x, v); }, k, kStep)) < kTol);
  CHECK(max_rel_error(values_of(dv), fd_gradient([&](const Vec& x) { return loss(q, k, x); }, v, kStep)) < kTol);
}
