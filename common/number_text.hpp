// Numbers in messages: the shortest text that reads back as the same double (1, 0.0003, 1e-08,
// 1e+300, inf, nan), where std::to_string would print "1000000000000000000.000000" or "0.000000".
// A count with its noun: "1 window", "3 windows", "0 bytes" (the noun given singular; English
// plurals in -s only).
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace usp {

inline std::string format_double(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general).ptr);
}

inline std::string count_text(std::int64_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace usp
