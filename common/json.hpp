// JsonWriter: builds the JSON files the course writes (summary.json, trainer_state.json,
// safetensors headers, the tools' --json output) one call at a time, in the order a reader reads
// them. It is a thin front over nlohmann::ordered_json: members keep the order they were written
// in; integers are exact (int64 and uint64); doubles print in the shortest text that reads back as
// the same double (0.1 -> 0.1, 2.0 -> 2.0); NaN and Inf are written as null.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace usp {

class JsonWriter {
 public:
  JsonWriter();
  JsonWriter(JsonWriter&&) noexcept;
  JsonWriter& operator=(JsonWriter&&) noexcept;
  ~JsonWriter();

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string& k);  // inside an object, before its value
  JsonWriter& value(double v);            // NaN/Inf are written as null
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(std::uint64_t v);
  JsonWriter& value(bool v);
  JsonWriter& value(const std::string& v);
  JsonWriter& value(const char* v) { return value(std::string(v)); }
  JsonWriter& raw(const std::string& json);  // an already-serialised value (parsed, then inserted)
  template <class T> JsonWriter& array(const std::vector<T>& values) {
    begin_array();
    for (const auto& v : values) value(v);
    return end_array();
  }
  template <class T> JsonWriter& field(const std::string& k, const T& v) { key(k); return value(v); }

  std::string str() const;                    // compact, one line
  void write_file(const std::string& path) const;  // atomically, creating parent directories

 private:
  nlohmann::ordered_json* put(nlohmann::ordered_json v);
  std::unique_ptr<nlohmann::ordered_json> root_;  // null until the first value
  std::vector<nlohmann::ordered_json*> open_;     // containers begun, not yet ended (innermost last)
  std::optional<std::string> key_;                // a key waiting for its value
};

// Creates dir and its parents; throws usp::Error on failure.
void make_dirs(const std::string& dir);

}  // namespace usp
