// The inputs the runner and the tests multiply (host vectors; shapes as in
// kernels/matmul/gemm.hpp: A M×K, B K×N, C0 M×N, row-major).
//   random_problem  A, B, C0 uniform in [-1, 1), from the counter-based RNG (seed, name, index)
//   exact_problem   small multiples of 1/4 in [-1, 1]: every product is a multiple of 1/16 and
//                   every partial sum stays far inside fp32's 24 bits, so every summation order
//                   gives the same, exact result — a check with zero tolerance that catches a
//                   single misplaced or missing term, which the rounding tolerance of a large K
//                   might hide. (These values are exact in bf16 too.)
#pragma once
#include <cstdint>
#include <vector>

#include "common/float_formats.hpp"
#include "common/rng.hpp"

namespace usp::ch11 {

struct HostProblem {
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  std::vector<float> A, B, C0;
};

inline HostProblem random_problem(int M, int N, int K, float alpha, float beta, std::uint64_t seed) {
  HostProblem p{M, N, K, alpha, beta, {}, {}, {}};
  const auto fill = [seed](std::vector<float>& v, std::size_t n, const char* name) {
    const rng::Key key = rng::make_key(seed, rng::hash_name(name));
    v.resize(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 2.0f * rng::uniform(key, i) - 1.0f;
  };
  fill(p.A, static_cast<std::size_t>(M) * K, "ch11.A");
  fill(p.B, static_cast<std::size_t>(K) * N, "ch11.B");
  fill(p.C0, static_cast<std::size_t>(M) * N, "ch11.C");
  return p;
}

// alpha and beta should be powers of two (or 0) for the result to stay exact.
inline HostProblem exact_problem(int M, int N, int K, float alpha, float beta, std::uint64_t seed = 11) {
  HostProblem p{M, N, K, alpha, beta, {}, {}, {}};
  const auto fill = [seed](std::vector<float>& v, std::size_t n, const char* name) {
    const rng::Key key = rng::make_key(seed, rng::hash_name(name));
    v.resize(n);
    for (std::size_t i = 0; i < n; ++i)  // q/4 for a random integer q in [-4, 4]
      v[i] = static_cast<float>(static_cast<int>(rng::uniform(key, i) * 9.0f) - 4) / 4.0f;
  };
  fill(p.A, static_cast<std::size_t>(M) * K, "ch11.exact.A");
  fill(p.B, static_cast<std::size_t>(K) * N, "ch11.exact.B");
  fill(p.C0, static_cast<std::size_t>(M) * N, "ch11.exact.C");
  return p;
}

// The values a bf16 tensor of v would hold (round to nearest even), as floats.
inline std::vector<float> rounded_to_bf16(const std::vector<float>& v) {
  std::vector<float> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = bf16_to_float(float_to_bf16(v[i]));
  return r;
}

}  // namespace usp::ch11
