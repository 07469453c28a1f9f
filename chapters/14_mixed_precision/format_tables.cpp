#include "chapters/14_mixed_precision/format_tables.hpp"

#include <cmath>

namespace usp::ch14 {

namespace {

template <class F>
FormatRow enumerate(const FormatInfo& info) {
  using Storage = typename F::Storage;
  FormatRow row{info};
  constexpr int bits = 1 + F::exponent_bits + F::mantissa_bits;
  row.patterns = std::int64_t{1} << bits;
  for (std::int64_t p = 0; p < row.patterns; ++p) {
    const float x = decode_float<F>(static_cast<Storage>(p));
    if (!std::isfinite(x)) continue;
    ++row.finite;
    if (encode_float<F>(x) == static_cast<Storage>(p)) ++row.round_trip;
    if (x >= 1.0f && x <= 2.0f) row.grid_1_2.push_back(x);  // positive patterns come first: ascending
  }
  row.in_1_2 = static_cast<std::int64_t>(row.grid_1_2.size());
  return row;
}

}  // namespace

std::vector<FormatRow> format_rows() {
  FormatRow f32{f32_info};
  f32.patterns = std::int64_t{1} << 32;
  f32.finite = f32.patterns - 2 * ((std::int64_t{1} << 23));  // minus ±inf and the NaNs: the all-ones exponent
  f32.round_trip = f32.finite;                                  // the identity
  f32.in_1_2 = (std::int64_t{1} << 23) + 1;
  return {f32, enumerate<Bf16Format>(bf16_info), enumerate<F16Format>(f16_info), enumerate<E4m3Format>(e4m3_info),
          enumerate<E5m2Format>(e5m2_info)};
}

}  // namespace usp::ch14
