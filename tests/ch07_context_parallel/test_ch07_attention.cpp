// Chapter 07: the pieces of context-parallel attention. The layout (exercise 07.2): every token
// of the sequence on exactly one rank at its position, and the ring's blocks covering the causal
// mask's chunk pairs exactly once, balanced under zig-zag. The merge (exercise 07.1): two key
// blocks' partial results merged = attention over both, and the merge's gradient turning the
// union's backward into the blocks'. Each context-parallel attention ([mpi], W = 1, 2, 4 ranks,
// contiguous and zig-zag): every rank's outputs and gradients equal one device's attention over
// the whole sequence, row for row.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>

#include "chapters/07_context_parallel/cp_attention.hpp"
#include "chapters/07_context_parallel/merge_attention.hpp"
#include "chapters/07_context_parallel/token_rows.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "tests/support/elementwise_check.hpp"
#include "tests/support/test_world.hpp"

using namespace usp;
using namespace usp::ch07;
using namespace usp::testing;

namespace {

Tensor random_tensor(const Shape& shape, const std::string& name) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 2.0f * rng::uniform(11, name, i) - 1.0f;
  return Tensor::from_floats(v, shape);
}

Tensor positions_tensor(const std::vector<std::int32_t>& p) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(p.size())}, DType::i32);
  std::copy(p.begin(), p.end(), t.data<std::int32_t>());
  return t;
}

Tensor iota(std::int64_t n, std::int32_t first) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = first + static_cast<std::int32_t>(i);
  return positions_tensor(p);
}

// Rows `positions` (token indices) of a [B, T, X, D] tensor, in that order: [B, n, X, D].
Tensor rows_at(const Tensor& x, const std::vector<std::int32_t>& positions) {
  const std::int64_t B = x.dim(0), n = static_cast<std::int64_t>(positions.size());
  Tensor out = Tensor::empty({B, n, x.dim(2), x.dim(3)});
  for (std::int64_t i = 0; i < n; ++i)
    put_tokens(take_tokens(x, positions[static_cast<std::size_t>(i)], 1), out, i);
  (void)B;
  return out;
}

// Tq queries at positions q0, q0 + 1, ... against 12 keys at 0..11 ([B, Tq, H, D] and [B, 12, G, D],
// random, named with `tag` appended), and one device's attention of the queries over all twelve.
struct TwelveKeys {
  Tensor q, k, v, dout, qp, out, lse;
};
TwelveKeys attention_over_twelve_keys(std::int64_t B, std::int64_t H, std::int64_t G, std::int64_t D, std::int64_t Tq,
                                      std::int32_t q0, const std::string& tag) {
  TwelveKeys t{random_tensor({B, Tq, H, D}, "q" + tag), random_tensor({B, 12, G, D}, "k" + tag),
               random_tensor({B, 12, G, D}, "v" + tag), random_tensor({B, Tq, H, D}, "dout" + tag), iota(Tq, q0),
               Tensor::empty({B, Tq, H, D}), Tensor::empty({B, H, Tq})};
  ops::attention_block_forward(t.q, t.k, t.v, t.qp, iota(12, 0), t.out, t.lse);
  return t;
}

// Exercise 07.1 over blocks of 6 keys: each block's partial attention (keys [k0, k0 + 6)) for the
// queries at positions qp, merged in the order of `starts` into a running result that starts
// empty (out 0, lse -inf). after(i, merged) runs after the i-th merge.
struct Merged {
  Tensor out, lse;
  std::vector<Tensor> block_out, block_lse;
};
Merged merge_blocks(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& qp,
                    std::initializer_list<std::int64_t> starts,
                    const std::function<void(std::size_t, const Merged&)>& after = {}) {
  const std::int64_t B = q.dim(0), Tq = q.dim(1), H = q.dim(2), D = q.dim(3);
  Merged m{Tensor::zeros({B, Tq, H, D}), Tensor::empty({B, H, Tq}), {}, {}};
  for (std::int64_t i = 0; i < m.lse.numel(); ++i) m.lse.data<float>()[i] = -INFINITY;
  for (std::int64_t k0 : starts) {
    m.block_out.push_back(Tensor::empty({B, Tq, H, D}));
    m.block_lse.push_back(Tensor::empty({B, H, Tq}));
    ops::attention_block_forward(q, take_tokens(k, k0, 6), take_tokens(v, k0, 6), qp, iota(6, static_cast<std::int32_t>(k0)),
                                 m.block_out.back(), m.block_lse.back());
    merge_partial_attention(m.out, m.lse, m.block_out.back(), m.block_lse.back());
    if (after) after(m.block_out.size() - 1, m);
  }
  return m;
}

}  // namespace

// ---- exercise 07.2: the layout ------------------------------------------------------------------

TEST_CASE("the layout (exercise 07.2): every token on one rank, the ring's blocks cover the mask once", "[ch07]") {
  CHECK(rank_chunks(CpSharding::zigzag, 4, 0) == std::vector<int>{0, 7});
  CHECK(rank_chunks(CpSharding::zigzag, 4, 3) == std::vector<int>{3, 4});
  CHECK(rank_positions(CpSharding::zigzag, 8, 2, 1) == std::vector<std::int32_t>{2, 3, 4, 5});
  CHECK(rank_positions(CpSharding::zigzag, 8, 2, 0) == std::vector<std::int32_t>{0, 1, 6, 7});
  CHECK(rank_positions(CpSharding::contiguous, 8, 2, 1) == std::vector<std::int32_t>{4, 5, 6, 7});
  // W = 2, zig-zag, rank 0 at step 1 holds rank 1's chunks {1, 2}: its chunk 3 sees both fully,
  // its chunk 0 neither.
  CHECK(ring_step_blocks(CpSharding::zigzag, 2, 0, 1) == std::vector<Block>{{3, 1, false}, {3, 2, false}});
  // W = 4, zig-zag, rank 1 at step 1 holds rank 0's chunks {0, 7} (the ring passes K/V from rank
  // r to r + 1): its chunks 1 and 6 see chunk 0 fully, chunk 7 not at all.
  CHECK(ring_step_blocks(CpSharding::zigzag, 4, 1, 1) == std::vector<Block>{{1, 0, false}, {6, 0, false}});
  for (CpSharding s : {CpSharding::contiguous, CpSharding::zigzag})
    for (int W : {1, 2, 3, 4, 8}) {
      INFO(sharding_name(s) << ", W = " << W);
      const int chunks = chunk_count(s, W);
      const std::int64_t seq = 4 * chunks;
      std::multiset<std::int32_t> seen;
      std::multiset<std::pair<int, int>> pairs;
      std::vector<std::int64_t> per_rank;
      for (int r = 0; r < W; ++r) {
        const auto pos = rank_positions(s, seq, W, r);
        CHECK(static_cast<std::int64_t>(pos.size()) == seq / W);
        seen.insert(pos.begin(), pos.end());
        std::int64_t n = 0;
        for (int i = 0; i < W; ++i)
          for (const Block& b : ring_step_blocks(s, W, r, i)) {
            pairs.insert({b.q_chunk, b.k_chunk});
            CHECK(b.diagonal == (b.q_chunk == b.k_chunk));
            ++n;
          }
        per_rank.push_back(n);
      }
      // Every position once; every (query chunk, key chunk) pair of the causal mask once.
      std::multiset<std::int32_t> all;
      for (std::int32_t p = 0; p < seq; ++p) all.insert(p);
      CHECK(seen == all);
      std::multiset<std::pair<int, int>> mask;
      for (int qc = 0; qc < chunks; ++qc)
        for (int kc = 0; kc <= qc; ++kc) mask.insert({qc, kc});
      CHECK(pairs == mask);
      for (int r = 0; r < W; ++r) {
        // contiguous: rank r computes its chunk against chunks 0..r; zig-zag: 2W + 1 on every rank.
        const std::int64_t want = s == CpSharding::contiguous ? r + 1 : 2 * W + 1;
        CHECK(per_rank[static_cast<std::size_t>(r)] == want);
      }
    }
}

TEST_CASE("the layout (exercise 07.2): a position's rank and row, the inverse of rank_positions", "[ch07]") {
  // Worked by hand. Zig-zag, W = 2, T = 8: chunks of 2, rank 0 holds chunks 0 and 3 (positions
  // 0 1 6 7), rank 1 chunks 1 and 2 (2 3 4 5).
  CHECK(token_place(CpSharding::zigzag, 8, 2, 0) == TokenPlace{0, 0});
  CHECK(token_place(CpSharding::zigzag, 8, 2, 6) == TokenPlace{0, 2});
  CHECK(token_place(CpSharding::zigzag, 8, 2, 7) == TokenPlace{0, 3});
  CHECK(token_place(CpSharding::zigzag, 8, 2, 3) == TokenPlace{1, 1});
  CHECK(token_place(CpSharding::zigzag, 8, 2, 4) == TokenPlace{1, 2});
  // Contiguous, W = 4, T = 12: chunks of 3.
  CHECK(token_place(CpSharding::contiguous, 12, 4, 7) == TokenPlace{2, 1});
  CHECK(token_place(CpSharding::contiguous, 12, 4, 11) == TokenPlace{3, 2});
  // Zig-zag, W = 3, T = 18: chunks of 3; position 16 is in chunk 5 = rank 0's late chunk, row 3 + 1.
  CHECK(token_place(CpSharding::zigzag, 18, 3, 16) == TokenPlace{0, 4});
  CHECK(token_place(CpSharding::zigzag, 18, 3, 9) == TokenPlace{2, 3});
  // Both directions agree everywhere, for odd and even world sizes and chunks of 1 and 3 tokens.
  for (CpSharding s : {CpSharding::contiguous, CpSharding::zigzag})
    for (int W : {1, 2, 3, 4, 5, 8})
      for (std::int64_t len : {1, 3}) {
        const std::int64_t seq = len * chunk_count(s, W);
        for (int r = 0; r < W; ++r) {
          const std::vector<std::int32_t> pos = rank_positions(s, seq, W, r);
          for (std::size_t i = 0; i < pos.size(); ++i) {
            INFO(sharding_name(s) << ", W = " << W << ", seq " << seq << ": rank " << r << " row " << i
                                  << " holds position " << pos[i]);
            CHECK(token_place(s, seq, W, pos[i]) == TokenPlace{r, static_cast<std::int64_t>(i)});
          }
        }
      }
}

TEST_CASE("the layout (exercise 07.2): what it cannot lay out is refused, with the contract's message", "[ch07]") {
  const auto zz = CpSharding::zigzag, ct = CpSharding::contiguous;
  CHECK_THROWS_WITH(rank_chunks(zz, 0, 0), "cp layout: world 0 must be at least 1");
  CHECK_THROWS_WITH(rank_positions(ct, 8, -1, 0), "cp layout: world -1 must be at least 1");
  CHECK_THROWS_WITH(token_place(zz, 8, 0, 0), "cp layout: world 0 must be at least 1");
  CHECK_THROWS_WITH(ring_step_blocks(zz, 0, 0, 0), "cp layout: world 0 must be at least 1");
  CHECK_THROWS_WITH(rank_chunks(zz, 4, 4), "cp layout: rank 4 is not one of the 4 ranks");
  CHECK_THROWS_WITH(rank_chunks(ct, 4, -1), "cp layout: rank -1 is not one of the 4 ranks");
  CHECK_THROWS_WITH(rank_positions(zz, 16, 2, 2), "cp layout: rank 2 is not one of the 2 ranks");
  CHECK_THROWS_WITH(ring_step_blocks(zz, 2, 2, 0), "cp layout: rank 2 is not one of the 2 ranks");
  CHECK_THROWS_WITH(ring_step_blocks(zz, 2, 1, 2), "cp layout: step 2 is not one of the 2 ring steps");
  CHECK_THROWS_WITH(ring_step_blocks(ct, 3, 0, -1), "cp layout: step -1 is not one of the 3 ring steps");
  // The rank before the step: both wrong names the rank.
  CHECK_THROWS_WITH(ring_step_blocks(ct, 3, 5, 7), "cp layout: rank 5 is not one of the 3 ranks");
  CHECK_THROWS_WITH(rank_positions(zz, 0, 2, 0), "cp layout: seq 0 must be at least 1");
  CHECK_THROWS_WITH(token_place(ct, -4, 2, 0), "cp layout: seq -4 must be at least 1");
  // Zig-zag needs 2W chunks: 36 tokens over 4 ranks are 9 per rank but not 8 equal chunks.
  CHECK_THROWS_WITH(rank_positions(zz, 36, 4, 1),
                    "cp layout: seq 36 is not divisible by the 8 chunks of the zig-zag layout over 4 ranks");
  CHECK_THROWS_WITH(token_place(zz, 6, 2, 0),
                    "cp layout: seq 6 is not divisible by the 4 chunks of the zig-zag layout over 2 ranks");
  CHECK_THROWS_WITH(rank_positions(ct, 30, 4, 0),
                    "cp layout: seq 30 is not divisible by the 4 chunks of the contiguous layout over 4 ranks");
  CHECK_NOTHROW(rank_positions(ct, 36, 4, 3));  // contiguous: W chunks are enough
  CHECK_THROWS_WITH(token_place(zz, 8, 2, 8), "cp layout: position 8 is outside the sequence of 8 tokens");
  CHECK_THROWS_WITH(token_place(ct, 8, 2, -1), "cp layout: position -1 is outside the sequence of 8 tokens");
  // The seq before the position.
  CHECK_THROWS_WITH(token_place(zz, 6, 2, 9),
                    "cp layout: seq 6 is not divisible by the 4 chunks of the zig-zag layout over 2 ranks");
}

// ---- exercise 07.1: the merge -------------------------------------------------------------------

TEST_CASE("the merge (exercise 07.1): two key blocks merged = attention over both, and its gradient", "[ch07]") {
  // Queries at positions 8..11 against keys 0..11 in two blocks, 0..5 and 6..11 (GQA, B = 2).
  const std::int64_t B = 2, H = 4, G = 2, D = 4, Tq = 4;
  const auto [q, k, v, dout, qp, out, lse] = attention_over_twelve_keys(B, H, G, D, Tq, 8, "");
  // The blocks' partial results, merged into a running result that starts empty.
  const Merged merged = merge_blocks(q, k, v, qp, {0, 6});
  const Tensor &acc = merged.out, &acc_lse = merged.lse;
  const std::vector<Tensor>& block_out = merged.block_out;
  const std::vector<Tensor>& block_lse = merged.block_lse;
  // fp32: a few ulps of outputs of order 1 (1e-6 is ~8 ulps of 1); a wrong weight is O(0.1).
  CHECK(elementwise_mismatch(acc.to_floats(), out.to_floats(), Tolerance::absolute(1e-6)) == "");
  CHECK(elementwise_mismatch(acc_lse.to_floats(), lse.to_floats(), Tolerance::absolute(1e-6)) == "");
  // Backward: the union's gradients (dlse = 0) = the sum over the blocks of each block's backward
  // from the gradient the merge hands it.
  Tensor dq = Tensor::zeros(q.shape()), dk = Tensor::zeros(k.shape()), dv = Tensor::zeros(v.shape());
  ops::attention_block_backward(dout, Tensor(), q, k, v, qp, iota(12, 0), out, lse, dq, dk, dv);
  Tensor dq2 = Tensor::zeros(q.shape()), dk2 = Tensor::zeros(k.shape()), dv2 = Tensor::zeros(v.shape());
  for (std::size_t b = 0; b < 2; ++b) {
    const std::int64_t k0 = static_cast<std::int64_t>(b) * 6;
    Tensor dob = Tensor::empty({B, Tq, H, D}), dlb = Tensor::empty({B, H, Tq});
    merge_partial_attention_backward(dout, out, lse, block_out[b], block_lse[b], dob, dlb);
    Tensor dkb = Tensor::zeros({B, 6, G, D}), dvb = Tensor::zeros({B, 6, G, D});
    ops::attention_block_backward(dob, dlb, q, take_tokens(k, k0, 6), take_tokens(v, k0, 6), qp,
                                  iota(6, static_cast<std::int32_t>(k0)), block_out[b], block_lse[b], dq2, dkb, dvb);
    put_tokens(dkb, dk2, k0);
    put_tokens(dvb, dv2, k0);
  }
  // Gradients of order 1 over 12 keys: reassociated fp32 sums, a few ulps each (2e-6 is ~16 ulps
  // of 1); a missing dlse term or weight is O(0.1).
  CHECK(elementwise_mismatch(dq2.to_floats(), dq.to_floats(), Tolerance::absolute(2e-6)) == "");
  CHECK(elementwise_mismatch(dk2.to_floats(), dk.to_floats(), Tolerance::absolute(2e-6)) == "");
  CHECK(elementwise_mismatch(dv2.to_floats(), dv.to_floats(), Tolerance::absolute(2e-6)) == "");
}

TEST_CASE("the merge (exercise 07.1): a block that sees nothing of a row changes nothing, even while the row is empty",
          "[ch07]") {
  // Queries at positions 0..3 see none of keys 6..11: that block's lse is -inf on every row, and
  // it comes first, so it meets a running result that is empty too (lse -inf as well: the case
  // where the log-sum-exp rule divides -inf by -inf). Then keys 0..5: the result must be attention
  // over all twelve keys, which is attention over 0..5.
  const std::int64_t B = 1, H = 2, G = 1, D = 4, Tq = 4;
  const auto [q, k, v, dout, qp, out, lse] = attention_over_twelve_keys(B, H, G, D, Tq, 0, "0");
  const Merged merged = merge_blocks(q, k, v, qp, {6, 0}, [](std::size_t i, const Merged& m) {
    if (i != 0) return;
    INFO("exercise 07.1: after merging a block that saw no key of any row into an empty result, "
         "the result must still be empty: out 0, lse -inf");
    for (float x : m.out.to_floats()) REQUIRE(x == 0.0f);
    for (float x : m.lse.to_floats()) REQUIRE(x == -INFINITY);
  });
  const Tensor &acc = merged.out, &acc_lse = merged.lse;
  const std::vector<Tensor>& block_out = merged.block_out;
  const std::vector<Tensor>& block_lse = merged.block_lse;
  // As in the two-block case above: a few ulps of values of order 1.
  CHECK(elementwise_mismatch(acc.to_floats(), out.to_floats(), Tolerance::absolute(1e-6)) == "");
  CHECK(elementwise_mismatch(acc_lse.to_floats(), lse.to_floats(), Tolerance::absolute(1e-6)) == "");
  // The block that saw nothing gets no gradient at all (0, not NaN).
  Tensor dob = Tensor::empty({B, Tq, H, D}), dlb = Tensor::empty({B, H, Tq});
  merge_partial_attention_backward(dout, out, lse, block_out[0], block_lse[0], dob, dlb);
  INFO("exercise 07.1: the gradient of a block that saw nothing of a row must be 0");
  for (float x : dob.to_floats()) CHECK(x == 0.0f);
  for (float x : dlb.to_floats()) CHECK(x == 0.0f);
}

// ---- every context-parallel attention = one device's attention over the whole sequence ----------

TEST_CASE("every context-parallel attention equals attention over the whole sequence, row for row",
          "[ch07][mpi]") {
  Communicator& cp = world();
  const int W = cp.size(), r = cp.rank();
  const std::int64_t B = 2, H = 8, G = 4, D = 4, seq = 16;
  // The whole sequence, the same on every rank; one device's attention over it.
  const Tensor q = random_tensor({B, seq, H, D}, "Q"), k = random_tensor({B, seq, G, D}, "K"),
               v = random_tensor({B, seq, G, D}, "V"), dout = random_tensor({B, seq, H, D}, "dO");
  Tensor out = Tensor::empty(q.shape()), probs;
  ops::attention_forward(q, k, v, out, probs);
  Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
  ops::attention_backward(dout, q, k, v, Tensor(), dq, dk, dv);
  for (CpAttention a : {CpAttention::ring, CpAttention::all_gather, CpAttention::all_to_all})
    for (CpSharding s : {CpSharding::contiguous, CpSharding::zigzag}) {
      INFO(attention_name(a) << ", " << sharding_name(s) << ", W = " << W << ", rank " << r);
      auto attention = make_cp_attention(a, cp, s, H, G);
      const std::vector<std::int32_t> mine = rank_positions(s, seq, W, r);
      const std::int64_t T = static_cast<std::int64_t>(mine.size());
      CHECK(attention->positions(T).to_floats() == positions_tensor(mine).to_floats());
      const Tensor qr = rows_at(q, mine), kr = rows_at(k, mine), vr = rows_at(v, mine);
      Tensor o = Tensor::empty(qr.shape()), saved;
      attention->attention_forward(qr, kr, vr, o, saved);
      // fp32 dot products and softmax sums over <= 16 keys, merged in another order than one
      // device sums them: a few ulps of values of order 1 (2e-6 is ~16 ulps of 1).
      CHECK(elementwise_mismatch(o.to_floats(), rows_at(out, mine).to_floats(), Tolerance::absolute(2e-6), r) == "");
      Tensor gq = Tensor::empty(qr.shape()), gk = Tensor::empty(kr.shape()), gv = Tensor::empty(vr.shape());
      attention->attention_backward(rows_at(dout, mine), qr, kr, vr, o, saved, gq, gk, gv);
      // dk and dv sum every rank's queries' contributions in another order: a few ulps more.
      CHECK(elementwise_mismatch(gq.to_floats(), rows_at(dq, mine).to_floats(), Tolerance::absolute(2e-6), r) == "");
      CHECK(elementwise_mismatch(gk.to_floats(), rows_at(dk, mine).to_floats(), Tolerance::absolute(2e-6), r) == "");
      CHECK(elementwise_mismatch(gv.to_floats(), rows_at(dv, mine).to_floats(), Tolerance::absolute(2e-6), r) == "");
    }
}

TEST_CASE("the all-to-all attention refuses heads that W does not divide, on every rank", "[ch07][mpi]") {
  Communicator& cp = world();
  if (cp.size() == 1) return;  // one rank divides everything
  CHECK_THROWS_WITH(make_cp_attention(CpAttention::all_to_all, cp, CpSharding::zigzag, 6 * cp.size() + 1, 1),
                    Catch::Contains("cp must divide the number of heads"));
}
