// The synthetic Markov corpus: its samples follow the declared transition table with the
// declared probabilities (so entropy_floor() is the real floor), each sample is a pure function
// of (seed, step, index), and a rank's slice of a batch equals those rows of the global batch.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "common/data/synthetic_corpus.hpp"

using namespace usp;

namespace {

constexpr int K = SyntheticCorpus::kSuccessors;

// Rank of token b among a's successors, or -1 if b is not one of them.
int successor_rank(const SyntheticCorpus& c, std::int32_t a, std::int32_t b) {
  for (int k = 0; k < K; ++k)
    if (c.successor(a, k) == b) return k;
  return -1;
}

bool rows_equal(const Tensor& a, std::int64_t row_a, const Tensor& b, std::int64_t row_b) {
  const std::int64_t seq = a.dim(1);
  return std::memcmp(a.data<std::int32_t>() + row_a * seq, b.data<std::int32_t>() + row_b * seq,
                     static_cast<std::size_t>(seq) * sizeof(std::int32_t)) == 0;
}

}  // namespace

TEST_CASE("synthetic corpus: entropy floor is H(0.4, 0.3, 0.2, 0.1)", "[io][data]") {
  // -(0.4 ln 0.4 + 0.3 ln 0.3 + 0.2 ln 0.2 + 0.1 ln 0.1), evaluated in Python to 17 digits.
  CHECK(SyntheticCorpus::entropy_floor() == Approx(1.2798542258336674).epsilon(1e-15));
  double total = 0;
  for (int k = 0; k < K; ++k) total += SyntheticCorpus::probability(k);
  CHECK(total == Approx(1.0).epsilon(1e-15));
}

TEST_CASE("synthetic corpus: every token has 4 distinct successors, fixed by the seed", "[io][data]") {
  const SyntheticCorpus c(11), same(11), other(12);
  int differing = 0;
  for (std::int32_t a = 0; a < 256; ++a) {
    std::set<std::int32_t> succ;
    for (int k = 0; k < K; ++k) {
      CHECK(c.successor(a, k) >= 0);
      CHECK(c.successor(a, k) < 256);
      CHECK(c.successor(a, k) == same.successor(a, k));
      succ.insert(c.successor(a, k));
      differing += c.successor(a, k) != other.successor(a, k);
    }
    CHECK(succ.size() == 4);
  }
  CHECK(differing > 900);  // another seed, another table (chance agreement: 1024/256 = 4 entries)

  const SyntheticCorpus small(3, 7);
  for (std::int32_t a = 0; a < 7; ++a)
    for (int k = 0; k < K; ++k) CHECK(small.successor(a, k) < 7);
  CHECK_THROWS_WITH(SyntheticCorpus(3, 3), Catch::Contains("vocab must be in [4, 2^31), got 3"));
}

TEST_CASE("synthetic corpus: transition frequencies and entropy match the table", "[io][data][stats]") {
  const SyntheticCorpus c(2024);
  constexpr std::int64_t kSteps = 250, kPerStep = 8, kSeq = 128;
  std::vector<std::array<std::int64_t, K>> counts(256, std::array<std::int64_t, K>{});
  std::int64_t n = 0, outside = 0;
  for (std::int64_t s = 0; s < kSteps; ++s) {
    const Batch b = c.batch(s, 0, kPerStep, kSeq);
    const std::int32_t* in = b.inputs.data<std::int32_t>();
    const std::int32_t* tg = b.targets.data<std::int32_t>();
    for (std::int64_t j = 0; j < kPerStep * kSeq; ++j) {
      const int k = successor_rank(c, in[j], tg[j]);
      if (k < 0) {
        ++outside;
        continue;
      }
      ++counts[static_cast<std::size_t>(in[j])][static_cast<std::size_t>(k)];
      ++n;
    }
  }
  CHECK(outside == 0);  // exact: no transition outside the table, ever
  REQUIRE(n == kSteps * kPerStep * kSeq);  // 256,000 transitions

  // (1) Pooled over states, successor rank k has frequency p_k: binomial, sd sqrt(p(1-p)/n)
  //     (about 0.001 here); 5 sd leaves a false-failure chance below 1e-6 per rank.
  std::array<std::int64_t, K> pooled{};
  for (const auto& row : counts)
    for (int k = 0; k < K; ++k) pooled[static_cast<std::size_t>(k)] += row[static_cast<std::size_t>(k)];
  for (int k = 0; k < K; ++k) {
    const double p = SyntheticCorpus::probability(k);
    const double freq = static_cast<double>(pooled[static_cast<std::size_t>(k)]) / static_cast<double>(n);
    INFO("rank " << k << ": frequency " << freq << ", p " << p);
    CHECK(std::abs(freq - p) < 5 * std::sqrt(p * (1 - p) / static_cast<double>(n)));
  }

  // (2) Each state on its own follows p: Pearson chi-square summed over the states whose
  //     expected counts are all >= 5 (n_a >= 50), 3 degrees of freedom each. Its mean is dof,
  //     its sd sqrt(2 dof); mean + 5 sd is exceeded with probability ~1e-6.
  double chi2 = 0;
  int dof = 0;
  for (const auto& row : counts) {
    std::int64_t na = 0;
    for (auto x : row) na += x;
    if (na < 50) continue;
    for (int k = 0; k < K; ++k) {
      const double expected = static_cast<double>(na) * SyntheticCorpus::probability(k);
      const double d = static_cast<double>(row[static_cast<std::size_t>(k)]) - expected;
      chi2 += d * d / expected;
    }
    dof += K - 1;
  }
  REQUIRE(dof > 600);  // most states are well sampled
  INFO("chi-square " << chi2 << " over " << dof << " degrees of freedom");
  CHECK(chi2 < dof + 5 * std::sqrt(2.0 * dof));

  // (3) The empirical conditional entropy Σ_a (n_a/n) H(p̂_a) estimates H(p). The plug-in
  //     estimator is biased low by about (K-1)·S/(2n) (S states visited: <= 0.0015 here) and
  //     its sd is sqrt((Σ p ln²p - H²)/n) = sqrt(0.181/n) = 0.00084; bias + 5 sd < 0.006.
  double h = 0;
  int states = 0;
  for (const auto& row : counts) {
    std::int64_t na = 0;
    for (auto x : row) na += x;
    if (na == 0) continue;
    ++states;
    for (auto x : row)
      if (x > 0) {
        const double q = static_cast<double>(x) / static_cast<double>(na);
        h -= static_cast<double>(na) / static_cast<double>(n) * q * std::log(q);
      }
  }
  const double bias = (K - 1) * states / (2.0 * static_cast<double>(n));
  INFO("empirical H " << h << ", floor " << SyntheticCorpus::entropy_floor() << ", states " << states);
  CHECK(std::abs(h - SyntheticCorpus::entropy_floor()) < bias + 5 * std::sqrt(0.181 / static_cast<double>(n)));
}

TEST_CASE("synthetic corpus: first tokens are uniform", "[io][data][stats]") {
  const SyntheticCorpus c(5);
  constexpr std::int64_t kSamples = 25600;  // 100 expected per token
  std::vector<std::int64_t> counts(256, 0);
  const Batch b = c.batch(0, 0, kSamples, 1);
  for (std::int64_t i = 0; i < kSamples; ++i) ++counts[static_cast<std::size_t>(b.inputs.data<std::int32_t>()[i])];
  double chi2 = 0;
  for (auto x : counts) chi2 += (static_cast<double>(x) - 100.0) * (static_cast<double>(x) - 100.0) / 100.0;
  // 255 degrees of freedom: mean 255, sd sqrt(510) = 22.6; mean + 5 sd.
  INFO("chi-square " << chi2);
  CHECK(chi2 < 255 + 5 * std::sqrt(510.0));
}

TEST_CASE("synthetic corpus: sample i of step s is a pure function of (seed, s, i)", "[io][data]") {
  const SyntheticCorpus c(42), again(42), other(43);
  constexpr std::int64_t seq = 64;
  std::vector<std::int32_t> x(seq + 1), y(seq + 1);
  auto differs = [&](const SyntheticCorpus& a, std::int64_t sa, std::int64_t ia, const SyntheticCorpus& b,
                     std::int64_t sb, std::int64_t ib) {
    a.sample(sa, ia, seq, x.data());
    b.sample(sb, ib, seq, y.data());
    return x != y;
  };
  CHECK_FALSE(differs(c, 7, 3, c, 7, 3));
  CHECK_FALSE(differs(c, 7, 3, again, 7, 3));  // a fresh corpus object: same sample
  CHECK(differs(c, 7, 3, c, 7, 4));            // next index
  CHECK(differs(c, 7, 3, c, 8, 3));            // next step
  CHECK(differs(c, 0, 1, c, 1, 0));            // (s, i) is not confused with (i, s)
  CHECK(differs(c, 7, 3, other, 7, 3));        // another seed
  // A shorter sample is the prefix of a longer one: the tokens do not depend on seq.
  std::vector<std::int32_t> shorter(17);
  c.sample(5, 9, 16, shorter.data());
  c.sample(5, 9, seq, x.data());
  CHECK(std::equal(shorter.begin(), shorter.end(), x.begin()));
  // Samples far apart in the counter space are still valid and distinct.
  CHECK(differs(c, 0, 0xFFFFFFFFLL, c, 0xFFFFFFFFLL, 0));
}

TEST_CASE("synthetic corpus: a rank's slice is its rows of the global batch", "[io][data]") {
  const SyntheticCorpus c(9);
  constexpr std::int64_t B = 8, seq = 32, step = 3;
  const Batch global = c.batch(step, 0, B, seq);
  REQUIRE(global.inputs.shape() == Shape{B, seq});
  REQUIRE(global.targets.shape() == Shape{B, seq});
  CHECK(global.inputs.dtype() == DType::i32);
  for (int ranks : {1, 2, 4, 8}) {
    const std::int64_t b = B / ranks;
    for (int r = 0; r < ranks; ++r) {
      const Batch mine = c.batch(step, r * b, b, seq);
      for (std::int64_t row = 0; row < b; ++row) {
        CHECK(rows_equal(mine.inputs, row, global.inputs, r * b + row));
        CHECK(rows_equal(mine.targets, row, global.targets, r * b + row));
      }
    }
  }
  // Targets are the inputs shifted by one: sample row r is t_0..t_seq.
  std::vector<std::int32_t> t(seq + 1);
  for (std::int64_t row = 0; row < B; ++row) {
    c.sample(step, row, seq, t.data());
    for (std::int64_t j = 0; j < seq; ++j) {
      CHECK(global.inputs.data<std::int32_t>()[row * seq + j] == t[static_cast<std::size_t>(j)]);
      CHECK(global.targets.data<std::int32_t>()[row * seq + j] == t[static_cast<std::size_t>(j + 1)]);
    }
  }
  CHECK_THROWS_WITH(c.batch(0, 0, 1, 0), Catch::Contains("sequence length must be >= 1, got 0"));
}
