// JsonValue: a parsed JSON document (RFC 8259), for reading what the course writes (config.json,
// trainer_state.json, safetensors headers) and what Hugging Face writes in the same files.
//
// The parser is strict: objects, arrays, strings (every escape, \uXXXX with surrogate pairs,
// turned into UTF-8), numbers in JSON's grammar (no leading zeros, no NaN/Infinity), true,
// false, null; nothing else (no comments, no trailing commas, no duplicate keys, no control
// characters inside strings), and nothing but whitespace after the value. A problem throws
// usp::UsageError "<what>: JSON error at byte N: <problem>" (the input is a file a user
// handed us), with N counted from 0.
//
// Numbers keep their literal text, so integers convert exactly to int64/uint64 (a 64-bit seed
// survives; a double would round it above 2^53) and reals to double.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace usp {

class JsonValue {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  JsonValue() = default;  // null

  Kind kind() const { return kind_; }
  const char* kind_name() const;  // "null", "boolean", "number", "string", "array", "object"
  bool is_null() const { return kind_ == Kind::null; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  // Typed access; a wrong kind (or a number that is not an integer in range) throws
  // UsageError naming the expected and the actual kind.
  bool as_bool() const;
  double as_double() const;
  std::int64_t as_int64() const;
  std::uint64_t as_uint64() const;
  const std::string& as_string() const;
  const std::vector<JsonValue>& items() const;                            // array
  const std::vector<std::pair<std::string, JsonValue>>& members() const;  // object, in file order
  const std::string& number_text() const;  // the literal, e.g. "1e-05"

  // Object lookup: nullptr when the key is absent (or this is not an object).
  const JsonValue* find(const std::string& key) const;
  // Object lookup that throws UsageError "missing key 'key'" when absent.
  const JsonValue& at(const std::string& key) const;

  std::size_t size() const;  // elements of an array or members of an object, else 0

 private:
  friend class JsonParser;
  Kind kind_ = Kind::null;
  bool bool_ = false;
  std::string text_;  // the string's value, or the number's literal
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses text as one JSON value. `what` names the source in error messages (a file name).
JsonValue parse_json(const std::string& text, const std::string& what);
// Reads and parses a file; UsageError "<what> 'path' not found" when it cannot be opened.
JsonValue read_json_file(const std::string& path, const std::string& what = "JSON file");

}  // namespace usp
