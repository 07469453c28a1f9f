// Numbers in messages: the shortest text that reads back as the same double (1, 0.0003, 1e-08,
// 1e+300, inf, nan), where std::to_string would print "1000000000000000000.000000" or "0.000000".
#pragma once
#include <charconv>
#include <string>

namespace usp {

inline std::string format_double(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general).ptr);
}

}  // namespace usp
