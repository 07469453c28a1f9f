#include "common/data/synthetic_corpus.hpp"

#include <cmath>

#include "common/rng.hpp"

namespace usp {

SyntheticCorpus::SyntheticCorpus(std::uint64_t seed, std::int64_t vocab) : seed_(seed), vocab_(vocab) {
  if (vocab < kSuccessors || vocab > (std::int64_t{1} << 31) - 1)
    throw UsageError("synthetic corpus: vocab must be in [" + std::to_string(kSuccessors) + ", 2^31), got " +
                     std::to_string(vocab));
  // Successors of token a: draws at counters a·2^16 + attempt, duplicates rejected (so the K
  // successors are distinct). Rejection is rare for vocab 256 (at most 3 in 256 per draw).
  const rng::Key key = rng::make_key(seed, rng::hash_name("data.chain"));
  const auto v = static_cast<std::uint64_t>(vocab);
  successors_.resize(static_cast<std::size_t>(vocab) * kSuccessors);
  for (std::uint64_t a = 0; a < v; ++a) {
    std::int32_t* succ = successors_.data() + a * kSuccessors;
    int have = 0;
    for (std::uint64_t attempt = 0; have < kSuccessors; ++attempt) {
      USP_CHECK(attempt < (1u << 16), "SyntheticCorpus: could not draw distinct successors");
      const rng::Block b = rng::philox4x32_10((a << 16) | attempt, key);
      const auto candidate = static_cast<std::int32_t>(b.v[0] % v);
      bool fresh = true;
      for (int k = 0; k < have; ++k) fresh = fresh && succ[k] != candidate;
      if (fresh) succ[have++] = candidate;
    }
  }
}

void SyntheticCorpus::sample(std::int64_t step, std::int64_t index, std::int64_t seq, std::int32_t* out) const {
  // The sample's own key: Philox(seed, "data") at counter step·2^32 + index.
  const std::uint64_t counter = (static_cast<std::uint64_t>(step) << 32) | static_cast<std::uint64_t>(index);
  const rng::Block s = rng::philox4x32_10(counter, rng::make_key(seed_, rng::hash_name("data")));
  const rng::Key key{s.v[0], s.v[1]};
  const auto v = static_cast<std::uint64_t>(vocab_);

  const rng::Block first = rng::philox4x32_10(0, key);
  std::int32_t token = static_cast<std::int32_t>(first.v[2] % v);
  out[0] = token;
  for (std::int64_t j = 1; j <= seq; ++j) {
    const rng::Block b = rng::philox4x32_10(static_cast<std::uint64_t>(j), key);
    const std::uint64_t tenth = ((static_cast<std::uint64_t>(b.v[0]) << 32) | b.v[1]) % 10;
    // Successor rank k: the first k whose cumulative tenths exceed the draw (4, 7, 9, 10).
    std::size_t k = 0;
    std::uint64_t cum = static_cast<std::uint64_t>(kTenths[0]);
    while (tenth >= cum) cum += static_cast<std::uint64_t>(kTenths[++k]);
    token = successor(token, static_cast<int>(k));
    out[j] = token;
  }
}

double SyntheticCorpus::entropy_floor() {
  double h = 0;
  for (int k = 0; k < kSuccessors; ++k) h -= probability(k) * std::log(probability(k));
  return h;
}

}  // namespace usp
