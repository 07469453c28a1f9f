// The number formats, from the core's own conversion code (common/float_formats.hpp): what each
// layout gives in range (smallest subnormal, smallest normal, largest finite) and resolution
// (the spacing of representable values between 1 and 2, 2^-mantissa_bits), and, for the narrow
// formats, an enumeration of every bit pattern: how many are finite, and that each finite one
// decodes to a float that encodes back to the same bits.
#pragma once
#include <cstdint>
#include <vector>

#include "common/float_formats.hpp"

namespace usp::ch14 {

struct FormatRow {
  FormatInfo info;
  std::int64_t patterns = 0;    // 2^bits (f32: 2^32, not enumerated)
  std::int64_t finite = 0;      // patterns that are finite numbers (±0 counted once each)
  std::int64_t round_trip = 0;  // finite patterns with encode(decode(p)) == p (all, or a bug)
  std::int64_t in_1_2 = 0;      // representable values in [1, 2]: 2^mantissa_bits + 1
  // Those values, ascending (grid_1_2.csv); empty for f32, whose 2^23 + 1 would only draw a solid line.
  std::vector<float> grid_1_2 = {};
};

// f32, bf16, f16, e4m3, e5m2 in that order.
std::vector<FormatRow> format_rows();

}  // namespace usp::ch14
