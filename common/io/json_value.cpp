#include "common/io/json_value.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/error.hpp"

namespace usp {

namespace {

// Deeper nesting than this is not a config file; refusing it keeps the recursion bounded.
constexpr int kMaxDepth = 512;

[[noreturn]] void kind_error(const char* expected, const JsonValue& v) {
  throw UsageError(std::string("JSON: expected ") + expected + ", got " + v.kind_name());
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

// Recursive descent over the text; pos_ is the byte being looked at.
class JsonParser {
 public:
  JsonParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  JsonValue document() {
    skip_space();
    JsonValue v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected '" + printable(s_[pos_]) + "' after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { fail_at(pos_, problem); }
  [[noreturn]] void fail_at(std::size_t pos, const std::string& problem) const {
    throw UsageError(what_ + ": JSON error at byte " + std::to_string(pos) + ": " + problem);
  }
  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    return buf;
  }

  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }

  void skip_space() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  void expect_word(const char* word) {
    const std::size_t start = pos_;
    for (const char* p = word; *p; ++p, ++pos_)
      if (at_end() || s_[pos_] != *p) fail_at(start, std::string("invalid literal (expected '") + word + "')");
  }

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (at_end()) fail("unexpected end of input, expected a value");
    JsonValue v;
    switch (peek()) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"':
        v.kind_ = JsonValue::Kind::string;
        v.text_ = string();
        break;
      case 't':
        expect_word("true");
        v.kind_ = JsonValue::Kind::boolean;
        v.bool_ = true;
        break;
      case 'f':
        expect_word("false");
        v.kind_ = JsonValue::Kind::boolean;
        break;
      case 'n': expect_word("null"); break;
      default:
        if (peek() == '-' || is_digit(peek())) {
          v.kind_ = JsonValue::Kind::number;
          v.text_ = number();
        } else {
          fail("unexpected '" + printable(peek()) + "', expected a value");
        }
    }
    return v;
  }

  void object(JsonValue& v, int depth) {
    v.kind_ = JsonValue::Kind::object;
    ++pos_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail(at_end() ? "unexpected end of input in an object" : "expected a string key");
      const std::size_t key_pos = pos_;
      std::string key = string();
      for (const auto& m : v.members_)
        if (m.first == key) fail_at(key_pos, "duplicate key '" + key + "'");
      skip_space();
      if (peek() != ':') fail("expected ':' after key '" + key + "'");
      ++pos_;
      skip_space();
      v.members_.emplace_back(std::move(key), value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return;
      }
      fail(at_end() ? "unexpected end of input in an object" : "expected ',' or '}' in an object");
    }
  }

  void array(JsonValue& v, int depth) {
    v.kind_ = JsonValue::Kind::array;
    ++pos_;  // '['
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      v.items_.push_back(value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return;
      }
      fail(at_end() ? "unexpected end of input in an array" : "expected ',' or ']' in an array");
    }
  }

  std::uint32_t hex4() {
    std::uint32_t cp = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (at_end()) fail("unexpected end of input in a \\u escape");
      const char c = s_[pos_];
      cp <<= 4;
      if (is_digit(c)) cp |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') cp |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') cp |= static_cast<std::uint32_t>(c - 'A' + 10);
      else fail("invalid hex digit '" + printable(c) + "' in a \\u escape");
    }
    return cp;
  }

  std::string string() {
    const std::size_t start = pos_;
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail_at(start, "unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character " + printable(c) + " inside a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      const std::size_t esc = pos_;
      ++pos_;
      if (at_end()) fail_at(start, "unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at(esc, "unpaired low surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.compare(pos_, 2, "\\u") != 0) fail_at(esc, "unpaired high surrogate in a \\u escape");
            pos_ += 2;
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail_at(esc, "unpaired high surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail_at(esc, "invalid escape '\\" + printable(e) + "'");
      }
    }
  }

  // number = [-] (0 | [1-9][0-9]*) [. [0-9]+] [(e|E) [+|-] [0-9]+]
  std::string number() {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (is_digit(peek())) fail_at(start, "leading zero in a number");
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      fail("expected a digit");
    }
    if (peek() == '.') {
      ++pos_;
      if (!is_digit(peek())) fail("expected a digit after '.'");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail("expected a digit in the exponent");
      while (is_digit(peek())) ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }

  const std::string& s_;
  const std::string& what_;
  std::size_t pos_ = 0;
};

const char* JsonValue::kind_name() const {
  switch (kind_) {
    case Kind::null: return "null";
    case Kind::boolean: return "boolean";
    case Kind::number: return "number";
    case Kind::string: return "string";
    case Kind::array: return "array";
    case Kind::object: return "object";
  }
  return "?";
}

bool JsonValue::as_bool() const {
  if (!is_bool()) kind_error("a boolean", *this);
  return bool_;
}

double JsonValue::as_double() const {
  if (!is_number()) kind_error("a number", *this);
  // strtod reads exactly JSON's number grammar (a subset of its own), correctly rounded.
  return std::strtod(text_.c_str(), nullptr);
}

std::int64_t JsonValue::as_int64() const {
  if (!is_number()) kind_error("an integer", *this);
  if (text_.find_first_of(".eE") != std::string::npos)
    throw UsageError("JSON: expected an integer, got " + text_);
  errno = 0;
  const long long v = std::strtoll(text_.c_str(), nullptr, 10);
  if (errno == ERANGE) throw UsageError("JSON: integer " + text_ + " does not fit in 64 bits");
  return static_cast<std::int64_t>(v);
}

std::uint64_t JsonValue::as_uint64() const {
  if (!is_number()) kind_error("an unsigned integer", *this);
  if (text_.find_first_of(".eE-") != std::string::npos)
    throw UsageError("JSON: expected an unsigned integer, got " + text_);
  errno = 0;
  const unsigned long long v = std::strtoull(text_.c_str(), nullptr, 10);
  if (errno == ERANGE) throw UsageError("JSON: integer " + text_ + " does not fit in 64 bits");
  return static_cast<std::uint64_t>(v);
}

const std::string& JsonValue::as_string() const {
  if (!is_string()) kind_error("a string", *this);
  return text_;
}

const std::vector<JsonValue>& JsonValue::items() const {
  if (!is_array()) kind_error("an array", *this);
  return items_;
}

const std::vector<std::pair<std::string, JsonValue>>& JsonValue::members() const {
  if (!is_object()) kind_error("an object", *this);
  return members_;
}

const std::string& JsonValue::number_text() const {
  if (!is_number()) kind_error("a number", *this);
  return text_;
}

const JsonValue* JsonValue::find(const std::string& key) const {
  if (!is_object()) return nullptr;
  for (const auto& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const JsonValue& JsonValue::at(const std::string& key) const {
  if (!is_object()) kind_error("an object", *this);
  const JsonValue* v = find(key);
  if (!v) throw UsageError("JSON: missing key '" + key + "'");
  return *v;
}

std::size_t JsonValue::size() const {
  if (is_array()) return items_.size();
  if (is_object()) return members_.size();
  return 0;
}

JsonValue parse_json(const std::string& text, const std::string& what) {
  return JsonParser(text, what).document();
}

JsonValue read_json_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw UsageError(what + " '" + path + "' not found");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(what + " '" + path + "' could not be opened");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UsageError(what + " '" + path + "' could not be read");
  return parse_json(ss.str(), path);
}

}  // namespace usp
