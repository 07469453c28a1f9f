// A small JSON writer for summary.json and the CSV/JSON outputs chapters write: values are
// appended in order; objects and arrays nest. Numbers print with enough digits to round-trip.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace usp {

class JsonWriter {
 public:
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
  JsonWriter& raw(const std::string& json);  // an already-serialised value
  template <class T> JsonWriter& array(const std::vector<T>& values) {
    begin_array();
    for (const auto& v : values) value(v);
    return end_array();
  }
  template <class T> JsonWriter& field(const std::string& k, const T& v) { key(k); return value(v); }

  const std::string& str() const { return out_; }
  void write_file(const std::string& path) const;  // creates parent directories

 private:
  void before_value();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string json_escape(const std::string& s);
// Creates dir and its parents; throws usp::Error on failure.
void make_dirs(const std::string& dir);

}  // namespace usp
