// Checked 64-bit counts: element counts, parameter counts and byte counts that come from user
// input (flags, config.json) are computed with these, so that a size too large for 64 bits is
// an error instead of a wrapped (negative, or small and wrong) number.
//
//   const Count bytes = Count(seq) * mbs * hidden * 2;   // throws OverflowError if it wraps
//   std::int64_t b = bytes.value();
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/number_text.hpp"

namespace usp {

// A count that does not fit in a signed 64-bit integer. A UsageError: it comes from sizes the
// user asked for, and is reported as "error: ..." with exit status 2.
class OverflowError : public UsageError {
 public:
  using UsageError::UsageError;
};

[[noreturn]] inline void throw_overflow(const char* op, std::int64_t a, std::int64_t b) {
  throw OverflowError("size overflow: " + std::to_string(a) + " " + op + " " + std::to_string(b) +
                      " does not fit in a 64-bit integer");
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow("+", a, b);
  return r;
}

inline std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) throw_overflow("-", a, b);
  return r;
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow("*", a, b);
  return r;
}

// A 64-bit count whose +, - and * throw OverflowError instead of wrapping; / and % are exact
// integer division (division by zero is a program error and is checked too).
class Count {
 public:
  constexpr Count(std::int64_t v = 0) : v_(v) {}  // implicit: formulas mix Counts and ints
  constexpr std::int64_t value() const { return v_; }

  friend Count operator+(Count a, Count b) { return checked_add(a.v_, b.v_); }
  friend Count operator-(Count a, Count b) { return checked_sub(a.v_, b.v_); }
  friend Count operator*(Count a, Count b) { return checked_mul(a.v_, b.v_); }
  friend Count operator/(Count a, Count b) {
    if (b.v_ == 0) throw Error("Count: division by zero");
    if (a.v_ == INT64_MIN && b.v_ == -1) throw_overflow("/", a.v_, b.v_);
    return a.v_ / b.v_;
  }
  friend Count operator%(Count a, Count b) {
    if (b.v_ == 0) throw Error("Count: division by zero");
    return b.v_ == -1 ? 0 : a.v_ % b.v_;
  }
  Count& operator+=(Count b) { return *this = *this + b; }
  Count& operator*=(Count b) { return *this = *this * b; }
  friend bool operator==(Count a, Count b) = default;
  friend auto operator<=>(Count a, Count b) = default;

 private:
  std::int64_t v_;
};

// ceil(x) as a count, for a count computed in floating point (a capacity, a scaled size): throws
// OverflowError naming `what` when x is not finite or ceil(x) does not fit in a signed 64-bit
// integer, where a plain static_cast would be undefined (in practice INT64_MIN: negative).
inline std::int64_t checked_ceil(double x, const std::string& what) {
  const double c = std::ceil(x);
  // 2^63 is exact as a double; every finite double below it converts exactly.
  if (!(c >= -9223372036854775808.0 && c < 9223372036854775808.0))
    throw OverflowError("size overflow: " + what + " = " + format_double(x) + " does not fit in a 64-bit integer");
  return static_cast<std::int64_t>(c);
}

// ceil(n / d) for n >= 0, d >= 1, without the n + d - 1 that can overflow.
inline std::int64_t div_round_up(std::int64_t n, std::int64_t d) { return n / d + (n % d != 0 ? 1 : 0); }

}  // namespace usp
