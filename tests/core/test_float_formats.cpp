// Conversions between float and bf16 / f16 / e4m3 / e5m2 (common/float_formats.hpp): bit-exact
// round-to-nearest-even, subnormals, NaN, overflow to inf (bf16, f16) and saturation (fp8).
//
// Two things keep these tests honest. Every narrow bit pattern is enumerated (there are at most
// 65536), and the fast encoder is compared with a slow oracle that knows nothing about bit
// tricks: it lists every finite value of the format and picks the nearest one, ties to the
// pattern with an even last bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/float_formats.hpp"

using namespace usp;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

template <class F>
constexpr const FormatInfo& info_of() {
  if constexpr (std::is_same_v<F, Bf16Format>) return bf16_info;
  else if constexpr (std::is_same_v<F, F16Format>) return f16_info;
  else if constexpr (std::is_same_v<F, E4m3Format>) return e4m3_info;
  else return e5m2_info;
}

template <class F>
constexpr std::uint32_t pattern_count() { return 1u << (1 + F::exponent_bits + F::mantissa_bits); }

template <class F>
constexpr std::uint32_t sign_bit() { return 1u << (F::exponent_bits + F::mantissa_bits); }

template <class F>
std::uint32_t encode(float x) { return encode_float<F>(x); }

template <class F>
float decode(std::uint32_t bits) { return decode_float<F>(static_cast<typename F::Storage>(bits)); }

float from_bits(std::uint32_t u) { return bits_to_float(u); }

std::string show(float x) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.9g (%a, bits 0x%08x)", double(x), double(x), float_to_bits(x));
  return buf;
}

std::string hex(std::uint32_t b) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", b);
  return buf;
}

// Collects failures of a loop over thousands of cases and reports the first few, instead of
// thousands of Catch assertions.
struct Mismatches {
  std::size_t count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ < 8) first += what + "\n";
  }
};

#define REQUIRE_NO_MISMATCH(m) \
  do {                         \
    INFO((m).first);           \
    CHECK((m).count == 0u);    \
  } while (0)

// The value of a bit pattern straight from the format's definition, in double.
template <class F>
double reference_value(std::uint32_t b) {
  constexpr int m_bits = F::mantissa_bits;
  constexpr std::uint32_t e_ones = (1u << F::exponent_bits) - 1u;
  constexpr std::uint32_t m_mask = (1u << m_bits) - 1u;
  const bool negative = (b & sign_bit<F>()) != 0;
  const std::uint32_t e = (b >> m_bits) & e_ones;
  const std::uint32_t m = b & m_mask;
  double mag;
  if (F::has_infinity && e == e_ones)
    mag = m != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (!F::has_infinity && e == e_ones && m == m_mask)
    mag = std::numeric_limits<double>::quiet_NaN();
  else if (e == 0)
    mag = std::ldexp(double(m), 1 - F::bias - m_bits);
  else
    mag = std::ldexp(1.0 + std::ldexp(double(m), -m_bits), int(e) - F::bias);
  return negative ? -mag : mag;
}

// The slow oracle: all non-negative finite values of F, sorted, and a nearest-value search.
template <class F>
class NearestValueOracle {
 public:
  NearestValueOracle() {
    for (std::uint32_t b = 0; b < sign_bit<F>(); ++b) {
      const double v = reference_value<F>(b);
      if (std::isfinite(v)) values_.push_back({v, b});
    }
    std::sort(values_.begin(), values_.end());
    if (!F::saturates) {
      // IEEE rounds as if the exponent range went on: the next value after max is 2^(emax+1)
      // (an even pattern), and whatever rounds to it becomes inf.
      const double max = values_.back().value;
      const double step = max - values_[values_.size() - 2].value;
      const std::uint32_t inf_bits = ((1u << F::exponent_bits) - 1u) << F::mantissa_bits;
      values_.push_back({max + step, inf_bits});
    }
  }

  // Expected bit pattern for a non-NaN float.
  std::uint32_t round(float x) const {
    const std::uint32_t sign = std::signbit(x) ? sign_bit<F>() : 0u;
    const double a = std::fabs(double(x));
    if (a >= values_.back().value) return sign | values_.back().bits;  // saturation or inf
    const auto hi = std::lower_bound(values_.begin(), values_.end(), Entry{a, 0});
    if (hi->value == a) return sign | hi->bits;
    const auto lo = hi - 1;
    // Compare 2a with lo + hi rather than the distances: both sides are exact in double.
    const double twice = 2.0 * a, sum = lo->value + hi->value;
    if (twice < sum) return sign | lo->bits;
    if (twice > sum) return sign | hi->bits;
    return sign | ((lo->bits & 1u) == 0 ? lo->bits : hi->bits);
  }

  std::size_t size() const { return values_.size(); }

 private:
  struct Entry {
    double value;
    std::uint32_t bits;
    bool operator<(const Entry& o) const { return value < o.value; }
  };
  std::vector<Entry> values_;
};

template <class F>
void check_against_oracle(const NearestValueOracle<F>& oracle, float x, Mismatches& bad) {
  if (std::isnan(x)) return;
  const std::uint32_t want = oracle.round(x), got = encode<F>(x);
  if (want != got) bad.add(show(x) + ": encoder " + hex(got) + ", oracle " + hex(want));
}

}  // namespace

// ---- constants --------------------------------------------------------------------------------

TEST_CASE("format constants give each format's range and resolution", "[core][dtype]") {
  CHECK(e4m3_info.max_finite == 448.0f);
  CHECK(e4m3_info.min_normal == 0x1p-6f);
  CHECK(e4m3_info.min_subnormal == 0x1p-9f);
  CHECK(e4m3_info.epsilon == 0.125f);
  CHECK_FALSE(e4m3_info.has_infinity);

  CHECK(e5m2_info.max_finite == 57344.0f);
  CHECK(e5m2_info.min_normal == 0x1p-14f);
  CHECK(e5m2_info.min_subnormal == 0x1p-16f);
  CHECK(e5m2_info.epsilon == 0.25f);

  CHECK(f16_info.max_finite == 65504.0f);
  CHECK(f16_info.min_normal == 0x1p-14f);
  CHECK(f16_info.min_subnormal == 0x1p-24f);
  CHECK(f16_info.epsilon == 0x1p-10f);

  CHECK(bf16_info.max_finite == 0x1.fep127f);  // 3.3895314e38
  CHECK(bf16_info.min_normal == 0x1p-126f);
  CHECK(bf16_info.min_subnormal == 0x1p-133f);
  CHECK(bf16_info.epsilon == 0x1p-7f);

  CHECK(f32_info.max_finite == std::numeric_limits<float>::max());
  CHECK(f32_info.min_normal == std::numeric_limits<float>::min());
  CHECK(f32_info.min_subnormal == std::numeric_limits<float>::denorm_min());
  CHECK(f32_info.epsilon == std::numeric_limits<float>::epsilon());

  CHECK(std::string(format_info(DType::e5m2).name) == "e5m2");
  CHECK(format_info(DType::bf16).mantissa_bits == 7);
  CHECK_THROWS_AS(format_info(DType::i32), usp::Error);
}

TEMPLATE_TEST_CASE("format constants agree with the decoder", "[core][dtype]", Bf16Format,
                   F16Format, E4m3Format, E5m2Format) {
  using F = TestType;
  const FormatInfo& info = info_of<F>();
  const std::uint32_t one_bits = std::uint32_t(F::bias) << F::mantissa_bits;
  CHECK(decode<F>(info.max_finite_bits) == info.max_finite);
  CHECK(decode<F>(1) == info.min_subnormal);
  CHECK(decode<F>(1u << F::mantissa_bits) == info.min_normal);
  CHECK(decode<F>(one_bits) == 1.0f);
  CHECK(decode<F>(one_bits + 1) - 1.0f == info.epsilon);
  // Nothing finite lies above max_finite: the next pattern is inf or NaN.
  CHECK_FALSE(std::isfinite(decode<F>(info.max_finite_bits + 1)));
}

// ---- exhaustive decode / encode -----------------------------------------------------------------

TEMPLATE_TEST_CASE("every bit pattern decodes exactly and encodes back to itself", "[core][dtype]",
                   Bf16Format, F16Format, E4m3Format, E5m2Format) {
  using F = TestType;
  Mismatches bad;
  std::uint32_t nans = 0, infs = 0;
  for (std::uint32_t b = 0; b < pattern_count<F>(); ++b) {
    const float v = decode<F>(b);
    const double want = reference_value<F>(b);
    const bool negative = (b & sign_bit<F>()) != 0;
    if (std::signbit(v) != negative) bad.add(hex(b) + ": sign lost, decoded " + show(v));
    if (std::isnan(want)) {
      ++nans;
      if (!std::isnan(v)) bad.add(hex(b) + ": NaN pattern decoded to " + show(v));
      const std::uint32_t back = encode<F>(v);
      if (!is_nan_bits<F>(static_cast<typename F::Storage>(back)) ||
          (back & sign_bit<F>()) != (b & sign_bit<F>()))
        bad.add(hex(b) + ": NaN re-encoded to " + hex(back));
      continue;
    }
    if (double(v) != want) bad.add(hex(b) + ": decoded " + show(v) + ", expected " + std::to_string(want));
    const std::uint32_t back = encode<F>(v);
    std::uint32_t expect = b;
    if (std::isinf(want)) {
      ++infs;
      if (F::saturates) expect = (b & sign_bit<F>()) | F::max_finite_bits;  // e5m2: inf -> max
    }
    if (back != expect) bad.add(hex(b) + " -> " + show(v) + " -> " + hex(back));
  }
  REQUIRE_NO_MISMATCH(bad);
  // Specials per sign: IEEE-like formats have one inf and 2^m - 1 NaNs; E4M3FN one NaN, no inf.
  const std::uint32_t per_sign_nans = F::has_infinity ? (1u << F::mantissa_bits) - 1u : 1u;
  CHECK(nans == 2 * per_sign_nans);
  CHECK(infs == (F::has_infinity ? 2u : 0u));
}

// ---- round to nearest, ties to even ---------------------------------------------------------------

TEMPLATE_TEST_CASE("halfway values round to the even neighbour", "[core][dtype]", Bf16Format,
                   F16Format, E4m3Format, E5m2Format) {
  using F = TestType;
  Mismatches bad;
  // Positive finite patterns increase with their value, so b and b + 1 are neighbours. (The
  // tie just above max_finite is in the overflow tests below.)
  for (std::uint32_t b = 0; b < F::max_finite_bits; ++b) {
    const double lo = decode<F>(b), hi = decode<F>(b + 1);
    const std::string at = " between " + hex(b) + " and " + hex(b + 1);
    const float mid = float((lo + hi) / 2);
    if (double(mid) != (lo + hi) / 2) bad.add("halfway point not a float" + at);
    const std::uint32_t even = (b & 1u) == 0 ? b : b + 1;
    const float below = std::nextafter(mid, 0.0f), above = std::nextafter(mid, kInf);
    if (encode<F>(mid) != even) bad.add("tie " + show(mid) + at + " gave " + hex(encode<F>(mid)));
    if (encode<F>(-mid) != (sign_bit<F>() | even)) bad.add("negative tie " + show(-mid) + at);
    if (encode<F>(below) != b) bad.add("just below the tie " + show(below) + at);
    if (encode<F>(above) != b + 1) bad.add("just above the tie " + show(above) + at);
  }
  REQUIRE_NO_MISMATCH(bad);
}

TEST_CASE("ties to even at known values", "[core][dtype]") {
  // 1 + eps/2 lies halfway between 1 (even) and 1 + eps (odd): it must go down; 1 + 3eps/2
  // lies between 1 + eps (odd) and 1 + 2eps (even): it must go up. Truncation fails the second.
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3F80);
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82);
  CHECK(float_to_f16(1.0f + 0x1p-11f) == 0x3C00);
  CHECK(float_to_f16(1.0f + 3 * 0x1p-11f) == 0x3C02);
  CHECK(float_to_e4m3(1.0625f) == 0x38);  // 1.0 | 1.125
  CHECK(float_to_e4m3(1.1875f) == 0x3A);  // 1.125 | 1.25
  CHECK(float_to_e5m2(1.125f) == 0x3C);   // 1.0 | 1.25
  CHECK(float_to_e5m2(1.375f) == 0x3E);   // 1.25 | 1.5
  // A carry out of the mantissa moves up a binade: e4m3 1.875 | 2.0 -> 2.0 (0x40).
  CHECK(float_to_e4m3(1.9375f) == 0x40);
  CHECK(float_to_bf16(-(1.0f + 3 * 0x1p-8f)) == 0xBF82);
}

// ---- overflow: inf for bf16/f16, saturation for fp8 -------------------------------------------------

TEST_CASE("fp8 conversions saturate to the largest finite value", "[core][dtype]") {
  CHECK(float_to_e4m3(448.0f) == 0x7E);
  CHECK(e4m3_to_float(0x7E) == 448.0f);
  CHECK(float_to_e4m3(464.0f) == 0x7E);  // the tie with the (missing) 480
  CHECK(float_to_e4m3(500.0f) == 0x7E);
  CHECK(float_to_e4m3(1e30f) == 0x7E);
  CHECK(float_to_e4m3(std::numeric_limits<float>::max()) == 0x7E);
  CHECK(float_to_e4m3(kInf) == 0x7E);
  CHECK(float_to_e4m3(-500.0f) == 0xFE);
  CHECK(float_to_e4m3(-kInf) == 0xFE);
  CHECK(e4m3_to_float(float_to_e4m3(500.0f)) == 448.0f);

  CHECK(float_to_e5m2(57344.0f) == 0x7B);
  CHECK(e5m2_to_float(0x7B) == 57344.0f);
  CHECK(float_to_e5m2(61440.0f) == 0x7B);  // the tie with 65536
  CHECK(float_to_e5m2(1e6f) == 0x7B);
  CHECK(float_to_e5m2(kInf) == 0x7B);
  CHECK(float_to_e5m2(-1e6f) == 0xFB);
  CHECK(float_to_e5m2(-kInf) == 0xFB);
  CHECK(e5m2_to_float(float_to_e5m2(1e6f)) == 57344.0f);
  // e5m2 still has infinities as bit patterns; only the conversion from float avoids them.
  CHECK(std::isinf(e5m2_to_float(0x7C)));
  CHECK(std::isinf(e5m2_to_float(0xFC)));
}

TEST_CASE("bf16 and f16 overflow to infinity", "[core][dtype]") {
  CHECK(float_to_f16(65504.0f) == 0x7BFF);
  CHECK(float_to_f16(65519.0f) == 0x7BFF);  // below the tie at 65520
  CHECK(float_to_f16(65520.0f) == 0x7C00);  // the tie goes to the even 65536, i.e. inf
  CHECK(float_to_f16(1e6f) == 0x7C00);
  CHECK(float_to_f16(-1e6f) == 0xFC00);
  CHECK(float_to_f16(kInf) == 0x7C00);
  CHECK(float_to_f16(-kInf) == 0xFC00);
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(float_to_bf16(0x1.fep127f) == 0x7F7F);
  CHECK(float_to_bf16(kInf) == 0x7F80);
  CHECK(float_to_bf16(-kInf) == 0xFF80);
}

// ---- subnormals -------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("subnormal boundaries", "[core][dtype]", Bf16Format, F16Format, E4m3Format,
                   E5m2Format) {
  using F = TestType;
  const float s = info_of<F>().min_subnormal;
  const std::uint32_t min_normal_bits = 1u << F::mantissa_bits;
  const std::uint32_t largest_subnormal_bits = min_normal_bits - 1u;
  const float largest_subnormal = float(largest_subnormal_bits) * s;

  CHECK(encode<F>(s) == 1u);
  CHECK(encode<F>(-s) == (sign_bit<F>() | 1u));
  CHECK(encode<F>(s / 2) == 0u);  // the tie between 0 and s goes to 0
  CHECK(encode<F>(std::nextafter(s / 2, kInf)) == 1u);
  CHECK(encode<F>(s / 4) == 0u);
  CHECK(encode<F>(-s / 4) == sign_bit<F>());  // flushes to negative zero
  CHECK(std::signbit(decode<F>(encode<F>(-s / 4))));
  CHECK(encode<F>(1.5f * s) == 2u);  // tie between 1 (odd) and 2 (even)
  CHECK(encode<F>(2.5f * s) == 2u);  // tie between 2 (even) and 3 (odd)

  CHECK(decode<F>(largest_subnormal_bits) == largest_subnormal);
  CHECK(encode<F>(largest_subnormal) == largest_subnormal_bits);
  // Halfway between the largest subnormal (odd) and the smallest normal (even): rounds up
  // into the normal range.
  CHECK(encode<F>(largest_subnormal + s / 2) == min_normal_bits);
  CHECK(encode<F>(std::nextafter(largest_subnormal + s / 2, 0.0f)) == largest_subnormal_bits);
  CHECK(encode<F>(info_of<F>().min_normal) == min_normal_bits);
}

TEST_CASE("float subnormals", "[core][dtype]") {
  // bf16 shares float's exponent range, so float subnormals map onto bf16 subnormals.
  CHECK(float_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_bf16(-std::numeric_limits<float>::denorm_min()) == 0x8000);
  CHECK(float_to_bf16(0x1p-133f) == 0x0001);
  CHECK(float_to_bf16(0x3p-134f) == 0x0002);  // tie 1 | 2
  CHECK(bf16_to_float(0x0001) == 0x1p-133f);
  CHECK(float_to_f16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_e4m3(std::numeric_limits<float>::min()) == 0x00);
  CHECK(float_to_e5m2(-std::numeric_limits<float>::min()) == 0x80);
}

// ---- NaN --------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("NaN stays NaN and keeps its sign", "[core][dtype]", Bf16Format, F16Format,
                   E4m3Format, E5m2Format) {
  using F = TestType;
  using S = typename F::Storage;
  // quiet, negative quiet, and signalling NaNs whose payload is only in the low bits (a plain
  // truncation of those would produce the inf pattern).
  for (std::uint32_t u : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    const std::uint32_t b = encode<F>(from_bits(u));
    INFO("float bits " << hex(u) << " -> " << hex(b));
    CHECK(is_nan_bits<F>(static_cast<S>(b)));
    CHECK(((b & sign_bit<F>()) != 0) == ((u >> 31) != 0));
    CHECK(std::isnan(decode<F>(b)));
  }
}

TEST_CASE("fp8 NaN patterns", "[core][dtype]") {
  CHECK(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()) == 0x7F);
  CHECK(float_to_e4m3(-std::numeric_limits<float>::quiet_NaN()) == 0xFF);
  CHECK(std::isnan(e4m3_to_float(0x7F)));
  CHECK(std::isnan(e4m3_to_float(0xFF)));
  CHECK(e4m3_to_float(0x78) == 256.0f);  // all-ones exponent is finite in E4M3FN
  for (std::uint8_t b : {0x7D, 0x7E, 0x7F}) CHECK(std::isnan(e5m2_to_float(b)));
  CHECK(is_nan_bits<E5m2Format>(float_to_e5m2(std::numeric_limits<float>::quiet_NaN())));
}

// ---- the independent oracle ----------------------------------------------------------------------

TEMPLATE_TEST_CASE("encoder agrees with the nearest-value oracle", "[core][dtype]", Bf16Format,
                   F16Format, E4m3Format, E5m2Format) {
  using F = TestType;
  const NearestValueOracle<F> oracle;
  Mismatches bad;
  std::mt19937 rng(20250214u);
  std::size_t checked = 0;
  auto check = [&](float x) {
    check_against_oracle(oracle, x, bad);
    ++checked;
  };

  // Edge cases: every value of the format, its float neighbours, and the halfway points
  // between consecutive values with their float neighbours, on both signs.
  for (std::uint32_t b = 0; b <= F::max_finite_bits; ++b) {
    const float v = decode<F>(b);
    // Past max_finite, the next value of an unbounded exponent range (2^(emax+1) for IEEE).
    const double next = b < F::max_finite_bits ? double(decode<F>(b + 1))
                                               : 2.0 * v - double(decode<F>(b - 1));
    const float mid = float((double(v) + next) / 2);
    for (float x : {v, std::nextafter(v, 0.0f), std::nextafter(v, kInf), mid,
                    std::nextafter(mid, 0.0f), std::nextafter(mid, kInf)}) {
      check(x);
      check(-x);
    }
  }
  for (float x : {0.0f, kInf, std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min()}) {
    check(x);
    check(-x);
  }

  // Random bit patterns: mostly far outside the narrow formats' range (overflow, underflow).
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int i = 0; i < 100000; ++i) check(from_bits(any_bits(rng)));

  // Random floats spread over the format's range and a few binades beyond it on both ends.
  const int lowest_exponent = 1 - F::bias - F::mantissa_bits - 3;
  const int highest_exponent =
      std::min(127, int(F::max_finite_bits >> F::mantissa_bits) - F::bias + 2);
  std::uniform_int_distribution<int> exponent(std::max(-149, lowest_exponent), highest_exponent);
  std::uniform_int_distribution<std::uint32_t> mantissa(0, 0x7FFFFFu);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::ldexp(1.0f + std::ldexp(float(mantissa(rng)), -23), exponent(rng));
    check((i & 1) ? -x : x);
  }

  INFO(checked << " floats checked against " << oracle.size() << " oracle values");
  CHECK(checked > 300000u);
  REQUIRE_NO_MISMATCH(bad);
}

// ---- buffer conversions (dtype.hpp) ----------------------------------------------------------------

TEST_CASE("convert_to_float / convert_from_float use the element codecs", "[core][dtype]") {
  const std::vector<float> src = {0.0f, -0.0f, 1.0f, -1.5f, 3.14159f, 1e-3f, 300.0f, 1e5f,
                                  -7e4f, 2e-8f, kInf, std::numeric_limits<float>::quiet_NaN()};
  const std::size_t n = src.size();

  std::vector<std::uint16_t> h(n);
  std::vector<std::uint8_t> q(n);
  std::vector<float> back(n);

  convert_from_float(src.data(), DType::bf16, h.data(), n);
  convert_to_float(DType::bf16, h.data(), back.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(h[i] == float_to_bf16(src[i]));
    CHECK(float_to_bits(back[i]) == float_to_bits(bf16_to_float(h[i])));
  }
  convert_from_float(src.data(), DType::f16, h.data(), n);
  convert_to_float(DType::f16, h.data(), back.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(h[i] == float_to_f16(src[i]));
    CHECK(float_to_bits(back[i]) == float_to_bits(f16_to_float(h[i])));
  }
  convert_from_float(src.data(), DType::e4m3, q.data(), n);
  convert_to_float(DType::e4m3, q.data(), back.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(q[i] == float_to_e4m3(src[i]));
    CHECK(float_to_bits(back[i]) == float_to_bits(e4m3_to_float(q[i])));
  }
  convert_from_float(src.data(), DType::e5m2, q.data(), n);
  convert_to_float(DType::e5m2, q.data(), back.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(q[i] == float_to_e5m2(src[i]));
    CHECK(float_to_bits(back[i]) == float_to_bits(e5m2_to_float(q[i])));
  }

  std::vector<float> copy(n);
  convert_from_float(src.data(), DType::f32, copy.data(), n);
  convert_to_float(DType::f32, copy.data(), back.data(), n);
  for (std::size_t i = 0; i < n; ++i) CHECK(float_to_bits(back[i]) == float_to_bits(src[i]));

  // n == 0 touches nothing, null pointers included.
  CHECK_NOTHROW(convert_to_float(DType::e4m3, nullptr, nullptr, 0));
  CHECK_THROWS_AS(convert_from_float(src.data(), static_cast<DType>(42), q.data(), n), usp::Error);
  CHECK_THROWS_AS(convert_to_float(static_cast<DType>(42), q.data(), back.data(), n), usp::Error);
}

TEST_CASE("i32 converts as integers", "[core][dtype]") {
  const std::vector<float> src = {0.0f, 1.0f, -1.0f, 2.5f, 3.5f, -2.5f, 0.5f, 7.7f, -7.7f,
                                  16777216.0f, -2147483648.0f};
  const std::vector<std::int32_t> want = {0, 1, -1, 2, 4, -2, 0, 8, -8, 16777216, INT32_MIN};
  std::vector<std::int32_t> got(src.size());
  convert_from_float(src.data(), DType::i32, got.data(), src.size());
  CHECK(got == want);

  const std::vector<std::int32_t> ints = {0, -5, 123456, 16777217, INT32_MAX};
  std::vector<float> f(ints.size());
  convert_to_float(DType::i32, ints.data(), f.data(), ints.size());
  CHECK(f == std::vector<float>{0.0f, -5.0f, 123456.0f, 16777216.0f, 2147483648.0f});

  std::int32_t out = 0;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), kInf, 2147483648.0f, -3e9f})
    CHECK_THROWS_AS(convert_from_float(&bad, DType::i32, &out, 1), usp::Error);
}
