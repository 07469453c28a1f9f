// Bit-exact conversions between float and the course's narrow float formats: bf16, f16
// (IEEE binary16), fp8 e4m3 (OCP E4M3FN) and fp8 e5m2. Narrow values travel as their raw bit
// patterns (uint16_t / uint8_t), exactly as a Tensor stores them.
//
//   float -> narrow: round to nearest, ties to even; subnormals of the target kept; NaN stays
//                    a (quiet) NaN; overflow goes to ±inf for bf16/f16 (as IEEE does) and
//                    saturates to ±max finite for the fp8 formats, ±inf included (the
//                    "satfinite" conversion FP8 training uses: a scaled tensor that overshoots
//                    should clip, not turn into NaN/inf).
//   narrow -> float: exact (every narrow value is a float).
//
// Everything is integer bit manipulation, never the hardware's conversion instructions, so the
// host and a CUDA kernel produce the same bits and the lesson can read how rounding works.
// All codec functions are USP_HD for kernels.
#pragma once
#include <cstdint>
#include <cstring>

#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/hostdevice.hpp"

namespace usp {

// ---- float <-> bits ------------------------------------------------------------------------
// memcpy is the portable host bit cast; device code has an intrinsic for it.
USP_HD std::uint32_t float_to_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

USP_HD float bits_to_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// ---- the formats' bit layouts ---------------------------------------------------------------
// One struct per format. Only scalar constants: CUDA device code may read scalar constexpr
// members directly, but not members of a constexpr object of class type.
//   value of a normal pattern    = (-1)^s * 1.m * 2^(e - bias)
//   value of a subnormal (e = 0) = (-1)^s * 0.m * 2^(1 - bias)
struct F32Format {
  using Storage = std::uint32_t;
  static constexpr int exponent_bits = 8, mantissa_bits = 23, bias = 127;
  static constexpr bool has_infinity = true, saturates = false;
  static constexpr Storage max_finite_bits = 0x7F7FFFFFu;
};

// bf16: the top half of a float; same exponent range, 8 significant bits.
struct Bf16Format {
  using Storage = std::uint16_t;
  static constexpr int exponent_bits = 8, mantissa_bits = 7, bias = 127;
  static constexpr bool has_infinity = true, saturates = false;
  static constexpr Storage max_finite_bits = 0x7F7F;
};

struct F16Format {
  using Storage = std::uint16_t;
  static constexpr int exponent_bits = 5, mantissa_bits = 10, bias = 15;
  static constexpr bool has_infinity = true, saturates = false;
  static constexpr Storage max_finite_bits = 0x7BFF;  // 65504
};

// E4M3FN: no infinities; the all-ones exponent holds finite values except S.1111.111 (NaN), which
// buys one extra binade: max finite S.1111.110 = 1.75 * 2^8 = 448.
struct E4m3Format {
  using Storage = std::uint8_t;
  static constexpr int exponent_bits = 4, mantissa_bits = 3, bias = 7;
  static constexpr bool has_infinity = false, saturates = true;
  static constexpr Storage max_finite_bits = 0x7E;  // 448
};

// E5M2: IEEE-like (inf = S.11111.00, NaN = S.11111.xx with xx != 0); max 1.75 * 2^15 = 57344.
struct E5m2Format {
  using Storage = std::uint8_t;
  static constexpr int exponent_bits = 5, mantissa_bits = 2, bias = 15;
  static constexpr bool has_infinity = true, saturates = true;
  static constexpr Storage max_finite_bits = 0x7B;  // 57344
};

// ---- what the layouts imply: range and resolution (chapter 14 plots these) -------------------
struct FormatInfo {
  const char* name;
  int exponent_bits;
  int mantissa_bits;  // stored bits; the significand has one more (the implicit bit)
  int bias;
  bool has_infinity;
  bool saturates;  // float -> format clamps overflow and ±inf to ±max_finite
  std::uint32_t max_finite_bits;
  float max_finite;     // largest finite value
  float min_normal;     // smallest positive normal value, 2^(1 - bias)
  float min_subnormal;  // smallest positive value, 2^(1 - bias - mantissa_bits)
  float epsilon;        // distance from 1.0 to the next larger value, 2^-mantissa_bits
};

namespace float_format_detail {

// 2^e exactly, at compile time (double holds every power of two these formats reach, and each
// of them is a float, subnormal or not).
constexpr double pow2(int e) {
  double r = 1.0;
  for (; e > 0; --e) r *= 2.0;
  for (; e < 0; ++e) r *= 0.5;
  return r;
}

template <class F>
constexpr FormatInfo describe(const char* name) {
  constexpr int m = F::mantissa_bits;
  constexpr std::uint32_t mantissa_mask = (1u << m) - 1;
  const double max_significand = 1.0 + double(F::max_finite_bits & mantissa_mask) / pow2(m);
  const int max_exponent = int(F::max_finite_bits >> m) - F::bias;
  return FormatInfo{name,
                    F::exponent_bits,
                    m,
                    F::bias,
                    F::has_infinity,
                    F::saturates,
                    F::max_finite_bits,
                    float(max_significand * pow2(max_exponent)),
                    float(pow2(1 - F::bias)),
                    float(pow2(1 - F::bias - m)),
                    float(pow2(-m))};
}

}  // namespace float_format_detail

inline constexpr FormatInfo f32_info = float_format_detail::describe<F32Format>("f32");
inline constexpr FormatInfo bf16_info = float_format_detail::describe<Bf16Format>("bf16");
inline constexpr FormatInfo f16_info = float_format_detail::describe<F16Format>("f16");
inline constexpr FormatInfo e4m3_info = float_format_detail::describe<E4m3Format>("e4m3");
inline constexpr FormatInfo e5m2_info = float_format_detail::describe<E5m2Format>("e5m2");

static_assert(e4m3_info.max_finite == 448.0f && e5m2_info.max_finite == 57344.0f);
static_assert(f16_info.max_finite == 65504.0f && f16_info.min_subnormal == 0x1p-24f);

// Host only (it throws): tables and plots ask by dtype; kernels use the *Format structs.
constexpr FormatInfo format_info(DType t) {
  switch (t) {
    case DType::f32: return f32_info;
    case DType::bf16: return bf16_info;
    case DType::f16: return f16_info;
    case DType::e4m3: return e4m3_info;
    case DType::e5m2: return e5m2_info;
    case DType::i32: break;
  }
  throw Error("format_info: i32 is not a floating-point format");
}

// ---- the generic codec ----------------------------------------------------------------------
namespace float_format_detail {

// sig / 2^shift rounded to nearest, ties to even (1 <= shift <= 31).
USP_HD std::uint32_t shift_right_rne(std::uint32_t sig, int shift) {
  const std::uint32_t kept = sig >> shift;
  const std::uint32_t rest = sig & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

}  // namespace float_format_detail

template <class F>
USP_HD bool is_nan_bits(typename F::Storage bits) {
  constexpr int m = F::mantissa_bits;
  constexpr std::uint32_t exponent_ones = (1u << F::exponent_bits) - 1u;
  constexpr std::uint32_t mantissa_mask = (1u << m) - 1u;
  const std::uint32_t e = (std::uint32_t(bits) >> m) & exponent_ones;
  const std::uint32_t mant = std::uint32_t(bits) & mantissa_mask;
  if (F::has_infinity) return e == exponent_ones && mant != 0;
  return e == exponent_ones && mant == mantissa_mask;  // E4M3FN: S.1111.111 only
}

// float -> format F, round to nearest even (see the top of the file for overflow and NaN).
template <class F>
USP_HD typename F::Storage encode_float(float x) {
  using Storage = typename F::Storage;
  constexpr int m = F::mantissa_bits;
  constexpr int e_bits = F::exponent_bits;
  constexpr std::uint32_t exponent_ones = (1u << e_bits) - 1u;

  const std::uint32_t u = float_to_bits(x);
  const std::uint32_t sign = (u >> 31) << (e_bits + m);
  const std::uint32_t fe = (u >> 23) & 0xFFu;
  const std::uint32_t fm = u & 0x7FFFFFu;

  if (fe == 0xFFu && fm != 0) {
    // NaN. With infinities: all-ones exponent, the quiet bit set (so a signalling NaN whose
    // payload would truncate to zero cannot turn into inf), and what fits of the payload.
    // E4M3FN has a single NaN per sign.
    if (F::has_infinity)
      return Storage(sign | (exponent_ones << m) | (1u << (m - 1)) | (fm >> (23 - m)));
    return Storage(sign | (exponent_ones << m) | ((1u << m) - 1u));
  }

  // |x| = sig * 2^(e - 23). Float subnormals have no implicit bit and share exponent -126;
  // inf comes through as 2^128, which the overflow test below catches.
  const std::uint32_t sig = fe != 0 ? (fm | 0x800000u) : fm;
  const int e = fe != 0 ? int(fe) - 127 : -126;

  // The target's biased exponent. Below 1 the result is subnormal: it sits at exponent field 1
  // (times 0.m instead of 1.m) and keeps (1 - target_e) fewer mantissa bits.
  const int target_e = e + F::bias;
  const int lost = target_e < 1 ? 1 - target_e : 0;
  int shift = 23 - m + lost;
  if (shift > 31) shift = 31;  // sig < 2^24 is below half of 2^31: rounds to zero either way
  const std::uint32_t rounded = float_format_detail::shift_right_rne(sig, shift);

  // Normal: rounded = 1.m (implicit bit at position m) and adding it to (target_e - 1) << m
  // puts the implicit bit into the exponent field; a carry out of the mantissa (1.11..1 rounding
  // up to 10.0) bumps the exponent as it should. Subnormal: rounded = 0.m under field 0, and
  // the largest subnormal rounding up becomes exactly the smallest normal.
  std::uint32_t r = (std::uint32_t(target_e + lost - 1) << m) + rounded;
  if (r > F::max_finite_bits) r = F::saturates ? F::max_finite_bits : (exponent_ones << m);
  return Storage(sign | r);
}

// format F -> float, exact.
template <class F>
USP_HD float decode_float(typename F::Storage bits) {
  constexpr int m = F::mantissa_bits;
  constexpr int e_bits = F::exponent_bits;
  constexpr std::uint32_t exponent_ones = (1u << e_bits) - 1u;
  constexpr std::uint32_t mantissa_mask = (1u << m) - 1u;

  const std::uint32_t b = bits;
  const std::uint32_t sign = ((b >> (e_bits + m)) & 1u) << 31;
  const std::uint32_t e = (b >> m) & exponent_ones;
  std::uint32_t mant = b & mantissa_mask;

  if constexpr (e_bits == 8) {
    // Float's own exponent field (bf16): the bits just move up, subnormals, inf and NaN included.
    return bits_to_float(sign | (e << 23) | (mant << (23 - m)));
  } else {
    if (is_nan_bits<F>(bits)) {
      if (F::has_infinity) return bits_to_float(sign | 0x7F800000u | (mant << (23 - m)));
      return bits_to_float(sign | 0x7FC00000u);
    }
    if (F::has_infinity && e == exponent_ones) return bits_to_float(sign | 0x7F800000u);
    if (e != 0)
      return bits_to_float(sign | (std::uint32_t(int(e) - F::bias + 127) << 23) | (mant << (23 - m)));
    if (mant == 0) return bits_to_float(sign);
    // Subnormal 0.m * 2^(1 - bias): shift the leading one up to the implicit position; the
    // float is normal (these formats' subnormals lie far above float's smallest normal).
    int exponent = 1 - F::bias;
    while ((mant & (1u << m)) == 0) {
      mant <<= 1;
      --exponent;
    }
    return bits_to_float(sign | (std::uint32_t(exponent + 127) << 23) |
                         ((mant & mantissa_mask) << (23 - m)));
  }
}

// ---- named conversions ----------------------------------------------------------------------
USP_HD std::uint16_t float_to_bf16(float x) { return encode_float<Bf16Format>(x); }
USP_HD float bf16_to_float(std::uint16_t b) { return decode_float<Bf16Format>(b); }
USP_HD std::uint16_t float_to_f16(float x) { return encode_float<F16Format>(x); }
USP_HD float f16_to_float(std::uint16_t b) { return decode_float<F16Format>(b); }
USP_HD std::uint8_t float_to_e4m3(float x) { return encode_float<E4m3Format>(x); }
USP_HD float e4m3_to_float(std::uint8_t b) { return decode_float<E4m3Format>(b); }
USP_HD std::uint8_t float_to_e5m2(float x) { return encode_float<E5m2Format>(x); }
USP_HD float e5m2_to_float(std::uint8_t b) { return decode_float<E5m2Format>(b); }

}  // namespace usp
