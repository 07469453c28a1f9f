// Choosing the next token from the logits of the last position.
//
//   temperature 0        greedy: the largest logit (ties: the lowest id)
//   temperature τ > 0    a draw from softmax(logits / τ) over the top_k largest logits (top_k 0:
//                        all of them; ties at the k-th place: the lower ids), with
//                        u = rng::uniform(seed, "sample", index) and the inverse CDF in id order
//
// A pure function of (logits, settings, seed, index): generation with the same seed repeats
// itself token for token (index = the token's position). τ < 1 sharpens the distribution toward
// greedy, τ > 1 flattens it; top_k cuts the long tail of unlikely tokens that a flat distribution
// would otherwise draw from. Errors (UsageError): τ < 0 or not finite; top_k < 0; no logits; a
// logit that is NaN or +inf (the model diverged).
#pragma once
#include <cstdint>
#include <vector>

namespace usp {

struct SamplingSettings {
  double temperature = 0;  // 0: greedy
  std::int64_t top_k = 0;  // 0: every token
  std::uint64_t seed = 0;
};

std::int32_t choose_token(const std::vector<float>& logits, const SamplingSettings& s, std::uint64_t index);

// The probabilities choose_token draws from (greedy: 1 on its choice), [vocab]; for tests.
std::vector<double> sampling_probabilities(const std::vector<float>& logits, const SamplingSettings& s);

}  // namespace usp
