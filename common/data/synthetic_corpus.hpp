// SyntheticCorpus: text from a first-order Markov chain whose entropy is known exactly, so a
// test can say "the model learned" in nats rather than by eye.
//
// The chain: every token a in [0, vocab) has exactly K = 4 distinct successors
// succ[a][0..3], drawn once from the corpus seed, taken with probabilities
// p = (0.4, 0.3, 0.2, 0.1). A sample's first token is uniform over the vocabulary.
//
// Entropy floor. Every target token t_{j+1} (j = 0..seq-1) follows a known token t_j, and
// every state has the same next-token distribution p, so for every target position
//   H(t_{j+1} | t_j) = H(p) = -Σ p_k ln p_k = 1.27985422583367 nats (1.84644 bits).
// No model can have an expected next-token loss below that (the cross-entropy to the true
// conditional is H(p) + KL ≥ H(p)), and a model that has learned the table reaches it. The
// first token is an input only (never a target), so it does not enter the loss.
//
// Randomness (all counter-based, common/rng.hpp):
//   successor table: for each a, draws keyed (seed, "data.chain") at counters a·2^16 + attempt,
//   word 0 mod vocab, a repeat rejected until K distinct tokens are drawn;
//   sample i of step s: a per-sample key = Philox(seed, "data") at counter s·2^32 + i, then
//   token j uses Philox(per-sample key) at counter j: word 2 (mod vocab) for the first token,
//   words 0-1 as a 64-bit integer mod 10 to pick the successor (0-3 -> rank 0, 4-6 -> 1,
//   7-8 -> 2, 9 -> 3). 2^64 mod 10 = 6, so the probabilities are exact to within 6/2^64.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "common/data/dataset.hpp"

namespace usp {

class SyntheticCorpus : public Dataset {
 public:
  static constexpr int kSuccessors = 4;
  // p_k in tenths: the successor probabilities 0.4, 0.3, 0.2, 0.1.
  static constexpr std::array<int, kSuccessors> kTenths = {4, 3, 2, 1};

  // vocab >= kSuccessors (UsageError otherwise).
  explicit SyntheticCorpus(std::uint64_t seed, std::int64_t vocab = 256);

  std::int64_t vocab() const override { return vocab_; }
  std::string spec() const override { return "synthetic"; }
  std::uint64_t seed() const override { return seed_; }
  void sample(std::int64_t step, std::int64_t index, std::int64_t seq, std::int32_t* out) const override;

  // H(p) in nats: the lowest expected next-token loss any model can reach on this corpus.
  static double entropy_floor();
  static double probability(int k) { return kTenths[static_cast<std::size_t>(k)] / 10.0; }

  // succ[a][k]: the k-th successor of token a (taken with probability(k)).
  std::int32_t successor(std::int32_t a, int k) const {
    return successors_[static_cast<std::size_t>(a) * kSuccessors + static_cast<std::size_t>(k)];
  }

 private:
  std::uint64_t seed_;
  std::int64_t vocab_;
  std::vector<std::int32_t> successors_;  // [vocab, K]: the chain's table (not tensor data)
};

}  // namespace usp
