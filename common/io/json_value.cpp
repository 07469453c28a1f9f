#include "common/io/json_value.hpp"

#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "common/error.hpp"
#include "common/io/input_file.hpp"

namespace usp {

namespace {

// Deeper nesting than this is not a config file; refusing it bounds the recursion of everything
// that later walks the value (copies, comparisons).
constexpr int kMaxDepth = 512;

[[noreturn]] void kind_error(const char* expected, const JsonValue& v) {
  throw UsageError(std::string("JSON: expected ") + expected + ", got " + v.type_name());
}

}  // namespace

JsonValue parse_json(const std::string& text, const std::string& what) {
  // nlohmann keeps the last of duplicate keys and accepts any depth: the callback refuses both.
  std::vector<std::set<std::string>> keys;  // per open object, the keys seen so far
  auto check = [&](int depth, JsonValue::parse_event_t event, JsonValue& parsed) {
    using E = JsonValue::parse_event_t;
    if (depth > kMaxDepth) throw UsageError(what + ": JSON error: nesting deeper than " + std::to_string(kMaxDepth));
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end) keys.pop_back();
    if (event == E::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw UsageError(what + ": JSON error: duplicate key '" + parsed.get<std::string>() + "'");
    return true;
  };
  try {
    return JsonValue::parse(text, check, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const JsonValue::parse_error& e) {
    // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 8: syntax error
    // while parsing object key - unexpected '}'; expected string literal"; keep from "at line".
    const std::string message = e.what();
    const std::size_t at = message.find("at line");
    throw UsageError(what + ": JSON error " + (at == std::string::npos ? message : message.substr(at)));
  }
}

JsonValue read_json_file(const std::string& path, const std::string& what) {
  require_input_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(what + " '" + path + "' could not be opened");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UsageError(what + " '" + path + "' could not be read");
  return parse_json(ss.str(), path);
}

std::int64_t json_int64(const JsonValue& v) {
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw UsageError("JSON: integer " + std::to_string(u) + " does not fit in int64");
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number()) throw UsageError("JSON: expected an integer, got " + v.dump());
  kind_error("an integer", v);
}

std::uint64_t json_uint64(const JsonValue& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number()) throw UsageError("JSON: expected an unsigned integer, got " + v.dump());
  kind_error("an unsigned integer", v);
}

double json_double(const JsonValue& v) {
  if (!v.is_number()) kind_error("a number", v);
  return v.get<double>();
}

const std::string& json_string(const JsonValue& v) {
  if (!v.is_string()) kind_error("a string", v);
  return v.get_ref<const std::string&>();
}

}  // namespace usp
