// Causal grouped-query attention: the double reference (GQA, T across the 64-query blocks,
// B > 1), causality (a future key/value changes nothing before it), and dq, dk, dv against
// finite differences of Σ r·out, with the probabilities given or recomputed.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/ops/ops.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {
// f32 scores (dot products of D <= 16), exp to ~2 ulp, a softmax sum over <= 130 keys and the
// P·v sum over <= 130 keys: each ~√n·2^-24 relative, together ~1e-6 of the largest output
// (measured: ~3e-7, the backward's dS = P∘(dP - rowsum) included). 3e-6 keeps margin; a wrong
// kv head, mask or scale is off by O(0.1).
constexpr double kTol = 3e-6;
// Double central differences of a smooth loss, h = 1e-5: truncation h²/6·|f'''| ~ 1e-11 for
// inputs of order 1, cancellation ~1e-16·|L|/h ~ 1e-10: far below kTol.
constexpr double kStep = 1e-5;

struct Case {
  std::int64_t b, t, h, g, d;
  Shape q_shape() const { return {b, t, h, d}; }
  Shape kv_shape() const { return {b, t, g, d}; }
  std::size_t q_numel() const { return static_cast<std::size_t>(b * t * h * d); }
  std::size_t kv_numel() const { return static_cast<std::size_t>(b * t * g * d); }
};

struct Inputs {
  Vec q, k, v;
};

Inputs random_inputs(const Case& c, std::uint64_t seed) {
  return {random_values(c.q_numel(), seed, -1.5, 1.5), random_values(c.kv_numel(), seed + 1, -1.5, 1.5),
          random_values(c.kv_numel(), seed + 2)};
}

// The op's output (and probabilities when want_probs).
Vec run_forward(const Case& c, const Inputs& in, Vec* probs = nullptr) {
  Tensor out = Tensor::empty(c.q_shape());
  Tensor p;
  if (probs) p = Tensor::empty({c.b, c.h, c.t, c.t});
  ops::attention_forward(tensor_of(in.q, c.q_shape()), tensor_of(in.k, c.kv_shape()), tensor_of(in.v, c.kv_shape()),
                         out, p);
  if (probs) *probs = values_of(p);
  return values_of(out);
}

}  // namespace

TEST_CASE("attention_forward matches the reference, probabilities included", "[ops][attention]") {
  const Case c = GENERATE(Case{2, 7, 4, 2, 8},     // GQA, 2 query heads per kv head, B > 1
                          Case{1, 70, 3, 1, 5},    // multi-query, T crosses the 64-query block
                          Case{2, 130, 2, 2, 16},  // H = G, three blocks, the last of 2 rows
                          Case{1, 1, 2, 1, 4});    // a single position
  CAPTURE(c.b, c.t, c.h, c.g, c.d);
  const Inputs in = random_inputs(c, 71);
  Vec want_probs;
  const Vec want = ref_attention(in.q, in.k, in.v, c.b, c.t, c.h, c.g, c.d, &want_probs);
  Vec probs;
  const Vec got = run_forward(c, in, &probs);
  CHECK(max_rel_error(got, want) < kTol);
  CHECK(max_rel_error(probs, want_probs) < kTol);
  // Above the diagonal: exactly zero.
  bool upper_zero = true;
  for (std::int64_t bh = 0; bh < c.b * c.h; ++bh)
    for (std::int64_t i = 0; i < c.t; ++i)
      for (std::int64_t j = i + 1; j < c.t; ++j) upper_zero = upper_zero && probs[(bh * c.t + i) * c.t + j] == 0.0;
  CHECK(upper_zero);
  // Without a probs tensor the same code runs on a scratch: the same bits.
  CHECK(run_forward(c, in) == got);
}

TEST_CASE("attention is causal: a future key or value changes no earlier output", "[ops][attention]") {
  const Case c{2, 70, 4, 2, 6};
  const Inputs in = random_inputs(c, 72);
  Vec probs0;
  const Vec out0 = run_forward(c, in, &probs0);
  const std::int64_t future = GENERATE(40, 63, 64, 69);  // inside a block, at its edges, the last
  CAPTURE(future);
  Inputs changed = in;
  for (std::int64_t hk = 0; hk < c.g; ++hk)
    for (std::int64_t e = 0; e < c.d; ++e) {
      const std::size_t i = static_cast<std::size_t>(((0 * c.t + future) * c.g + hk) * c.d + e);  // batch 0
      changed.k[i] = rounded({changed.k[i] + 2.0}, DType::f32)[0];
      changed.v[i] = rounded({changed.v[i] - 3.0}, DType::f32)[0];
    }
  Vec probs1;
  const Vec out1 = run_forward(c, changed, &probs1);
  const std::int64_t row = c.h * c.d;  // one position of out
  // Earlier positions of batch 0, and all of batch 1: bit for bit (the masked products add 0).
  for (std::int64_t t = 0; t < c.t; ++t)
    for (std::int64_t bi = 0; bi < c.b; ++bi) {
      const bool must_match = bi == 1 || t < future;
      bool same = true;
      for (std::int64_t e = 0; e < row; ++e) same = same && out0[(bi * c.t + t) * row + e] == out1[(bi * c.t + t) * row + e];
      if (must_match) {
        CAPTURE(bi, t);
        CHECK(same);
      } else if (t == future) {
        CHECK_FALSE(same);  // the change is seen where it should be
      }
    }
  for (std::int64_t hq = 0; hq < c.h; ++hq)
    for (std::int64_t t = 0; t < future; ++t)
      for (std::int64_t j = 0; j < c.t; ++j)
        REQUIRE(probs0[(hq * c.t + t) * c.t + j] == probs1[(hq * c.t + t) * c.t + j]);
}

TEST_CASE("attention_backward matches finite differences, probs given or recomputed", "[ops][attention]") {
  // Small: every element checked. Long: T crosses two block edges; a sample of elements (those at
  // positions 0, 63, 64 and 69 included) keeps the finite differences fast.
  const Case c = GENERATE(Case{2, 6, 4, 2, 3}, Case{1, 70, 4, 2, 4}, Case{1, 130, 2, 1, 3});
  CAPTURE(c.b, c.t, c.h, c.g, c.d);
  const Inputs in = random_inputs(c, 73);
  const Vec r = random_values(c.q_numel(), 74);

  auto sample = [&](std::size_t numel, std::int64_t heads, std::uint64_t seed) {
    if (c.t <= 8) return std::vector<std::size_t>{};  // all
    std::vector<std::size_t> idx = some_indices(numel, 40, seed);
    for (std::int64_t t : {0, 63, 64, 69})  // one element of each of these positions
      idx.push_back(static_cast<std::size_t>((t * heads + (t % heads)) * c.d + t % c.d));
    return idx;
  };
  const std::vector<std::size_t> iq = sample(c.q_numel(), c.h, 75), ik = sample(c.kv_numel(), c.g, 76);
  auto loss_q = [&](const Vec& x) { return weighted_sum(r, ref_attention(x, in.k, in.v, c.b, c.t, c.h, c.g, c.d)); };
  auto loss_k = [&](const Vec& x) { return weighted_sum(r, ref_attention(in.q, x, in.v, c.b, c.t, c.h, c.g, c.d)); };
  auto loss_v = [&](const Vec& x) { return weighted_sum(r, ref_attention(in.q, in.k, x, c.b, c.t, c.h, c.g, c.d)); };
  const Vec want_dq = fd_gradient(loss_q, in.q, kStep, iq);
  const Vec want_dk = fd_gradient(loss_k, in.k, kStep, ik);
  const Vec want_dv = fd_gradient(loss_v, in.v, kStep, ik);
  // Compare only what the finite differences computed (their scale: the largest of them).
  auto only = [](const Vec& got, const std::vector<std::size_t>& idx) {
    if (idx.empty()) return got;
    Vec picked(got.size(), 0.0);
    for (std::size_t i : idx) picked[i] = got[i];
    return picked;
  };

  Tensor qt = tensor_of(in.q, c.q_shape()), kt = tensor_of(in.k, c.kv_shape()), vt = tensor_of(in.v, c.kv_shape());
  Tensor out = Tensor::empty(c.q_shape()), probs = Tensor::empty({c.b, c.h, c.t, c.t});
  ops::attention_forward(qt, kt, vt, out, probs);
  Tensor dout = tensor_of(r, c.q_shape());

  Vec got[2][3];
  for (int recompute = 0; recompute < 2; ++recompute) {
    Tensor dq = Tensor::empty(c.q_shape()), dk = Tensor::empty(c.kv_shape()), dv = Tensor::empty(c.kv_shape());
    dq.fill(NAN);  // overwritten, never read
    dk.fill(NAN);
    dv.fill(NAN);
    ops::attention_backward(dout, qt, kt, vt, recompute ? Tensor() : probs, dq, dk, dv);
    got[recompute][0] = values_of(dq);
    got[recompute][1] = values_of(dk);
    got[recompute][2] = values_of(dv);
  }
  CHECK(max_rel_error(only(got[0][0], iq), want_dq) < kTol);
  CHECK(max_rel_error(only(got[0][1], ik), want_dk) < kTol);
  CHECK(max_rel_error(only(got[0][2], ik), want_dv) < kTol);
  // Recomputing the probabilities runs the forward's own code: the same bits.
  for (int i = 0; i < 3; ++i) CHECK(got[1][i] == got[0][i]);
}
