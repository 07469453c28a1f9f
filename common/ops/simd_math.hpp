// Loop bodies the compiler can vectorize without -ffast-math (internal to common/ops/).
//
// Under strict IEEE semantics a compiler may not reorder a float sum, so `s += x[i]` runs one
// element at a time. lane_sum / lane_dot keep kLanes independent partial sums instead (a fixed,
// deterministic order), which the vectorizer maps onto SIMD registers. exp_approx is expf built
// from arithmetic and integer bit operations only (no libm call, no float comparison), so loops
// calling it vectorize too.
//
// USP_SIMD_CLONES on a function holding such a loop compiles it twice, for AVX2 and for the
// baseline, and picks the clone at load time (GCC's target_clones, x86-64 Linux): the build
// stays portable while an AVX2 machine runs 8-wide loops (2-3x on the exp-bound ones). The
// clone is "avx2" rather than "arch=haswell": GCC inlines the plain inline helpers below into
// an avx2 clone but not into an arch= one, and without them inlined nothing vectorizes. Both
// clones compute the same bits: "avx2" enables no FMA contraction, and the lanes fix the order
// of every sum whatever the vector width.
#pragma once
#include <bit>
#include <cstdint>

#ifndef USP_SIMD_CLONES  // -DUSP_SIMD_CLONES= builds the baseline only
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define USP_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define USP_SIMD_CLONES
#endif
#endif

namespace usp::ops::detail {

inline constexpr int kLanes = 8;

// Σ x[i] over n elements.
inline float lane_sum(const float* x, std::int64_t n) {
  float acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  for (; i < n; ++i) s += x[i];
  return s;
}

// Σ x[i] · y[i] over n elements.
inline float lane_dot(const float* x, const float* y, std::int64_t n) {
  float acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * y[i + l];
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

// max x[i] over n >= 1 elements.
inline float lane_max(const float* x, std::int64_t n) {
  float acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = x[0];
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = x[i + l] > acc[l] ? x[i + l] : acc[l];
  float m = acc[0];
  for (int l = 1; l < kLanes; ++l) m = acc[l] > m ? acc[l] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// e^x to about 2 ulp for |x| <= 87; beyond, x is clamped to ±87 (e^-87 ~ 1.6e-38, e^87 ~ 6e37),
// infinities included; NaN stays NaN. e^x = 2^n · e^r with n = round(x / ln 2), |r| <= ln 2 / 2,
// e^r from a degree-7 polynomial (Cephes' expf coefficients), 2^n assembled in the exponent bits.
// The clamp compares the bit patterns as integers: a float comparison may raise the invalid
// flag on NaN, so under the default -ftrapping-math the compiler would not make it branch-free.
inline float exp_approx(float x) {
  constexpr std::uint32_t k87 = 0x42ae0000u;   // bits of 87.0f
  constexpr std::uint32_t kInf = 0x7f800000u;  // bits of +inf; larger magnitudes are NaN
  const std::uint32_t xb = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = xb & 0x80000000u;
  std::uint32_t mag = xb ^ sign;
  mag = ((mag > k87) & (mag <= kInf)) ? k87 : mag;
  x = std::bit_cast<float>(mag | sign);
  // Adding 1.5 · 2^23 rounds x / ln 2 to the nearest integer n (the default rounding mode),
  // which then sits in t's low mantissa bits: t's bits = [exponent of 2^23][2^22 + n].
  const float t = x * 1.44269504088896341f + 12582912.0f;
  const float n = t - 12582912.0f;
  // r = x - n · ln 2, with ln 2 split in a part exact in n · ln2_hi and a small correction.
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n: the biased exponent n + 127 is the low 9 bits of t's bits + 127 (2^22 is a multiple of
  // 2^9), shifted into the exponent field; unsigned arithmetic, so no int conversion of NaN.
  const std::uint32_t scale = (std::bit_cast<std::uint32_t>(t) + 127u) << 23;
  return p * std::bit_cast<float>(scale);
}

}  // namespace usp::ops::detail
