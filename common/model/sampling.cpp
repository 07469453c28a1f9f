#include "common/model/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/error.hpp"
#include "common/rng.hpp"

namespace usp {

namespace {

void check(const std::vector<float>& logits, const SamplingSettings& s) {
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature))
    throw UsageError("temperature must be a finite number >= 0, got " + std::to_string(s.temperature));
  if (s.top_k < 0) throw UsageError("top-k must be >= 0 (0: every token), got " + std::to_string(s.top_k));
  if (logits.empty()) throw UsageError("no logits to choose a token from");
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (std::isnan(logits[i]) || logits[i] == INFINITY)
      throw UsageError("logit " + std::to_string(i) + " is " + std::to_string(logits[i]) +
                       ": the model's output is not finite");
}

}  // namespace

std::vector<double> sampling_probabilities(const std::vector<float>& logits, const SamplingSettings& s) {
  check(logits, s);
  const std::size_t V = logits.size();
  std::vector<double> p(V, 0.0);
  if (s.temperature == 0) {
    p[static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())] = 1.0;
    return p;
  }
  // The ids by logit, largest first (stable: equal logits keep id order), cut to top_k.
  std::vector<std::size_t> ids(V);
  std::iota(ids.begin(), ids.end(), std::size_t{0});
  std::stable_sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
  const std::size_t k = s.top_k == 0 ? V : std::min(V, static_cast<std::size_t>(s.top_k));
  const double top = logits[ids[0]];
  double sum = 0;
  for (std::size_t j = 0; j < k; ++j) sum += p[ids[j]] = std::exp((logits[ids[j]] - top) / s.temperature);
  for (double& x : p) x /= sum;
  return p;
}

std::int32_t choose_token(const std::vector<float>& logits, const SamplingSettings& s, std::uint64_t index) {
  const std::vector<double> p = sampling_probabilities(logits, s);
  if (s.temperature == 0) return static_cast<std::int32_t>(std::max_element(p.begin(), p.end()) - p.begin());
  const double u = rng::uniform(s.seed, "sample", index);  // in (0, 1)
  double cdf = 0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    last = i;
    cdf += p[i];
    if (u < cdf) return static_cast<std::int32_t>(i);
  }
  return static_cast<std::int32_t>(last);  // u above a CDF that rounding left just under 1
}

}  // namespace usp
