// Reading JSON: what the course writes (config.json, trainer_state.json, safetensors headers) and
// what Hugging Face writes in the same files, parsed by nlohmann::json.
//
// JsonValue is nlohmann's ordered_json: object members keep file order; integers stay exact
// (int64, or uint64 when non-negative: a 64-bit seed survives, where a double would round it
// above 2^53); other numbers are doubles, correctly rounded.
//
// parse_json is strict: RFC 8259 only (no comments, no trailing commas, no NaN), and, beyond
// what nlohmann checks, no duplicate keys and no nesting deeper than 512. A problem throws
// usp::UsageError "<what>: JSON error at line L, column C: <problem>" (the input is a file a
// user handed us).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.hpp"

namespace usp {

using JsonValue = nlohmann::ordered_json;

// Parses text as one JSON value. `what` names the source in error messages (a file name).
JsonValue parse_json(const std::string& text, const std::string& what);
// Reads and parses a file; UsageError "<what> 'path' not found" when it cannot be opened.
JsonValue read_json_file(const std::string& path, const std::string& what = "JSON file");

// Typed reads that never convert silently (nlohmann's get<> truncates 1.5 to 1 and wraps
// 2^63 to a negative int64): a wrong kind, a fraction where an integer is expected, or an
// integer outside the type's range throws UsageError, e.g. "JSON: expected an integer, got
// string", "JSON: integer 18446744073709551615 does not fit in int64".
std::int64_t json_int64(const JsonValue& v);
std::uint64_t json_uint64(const JsonValue& v);
double json_double(const JsonValue& v);  // any number
const std::string& json_string(const JsonValue& v);

}  // namespace usp
