#include "common/json.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/io/output_file.hpp"

namespace usp {

using Json = nlohmann::ordered_json;

void make_dirs(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory " + dir + ": " + ec.message());
}

JsonWriter::JsonWriter() = default;
JsonWriter::JsonWriter(JsonWriter&&) noexcept = default;
JsonWriter& JsonWriter::operator=(JsonWriter&&) noexcept = default;
JsonWriter::~JsonWriter() = default;

// Places v where the writer stands: the document itself, the next element of the open array, or
// the member named by the pending key. Pointers in open_ stay valid: only the innermost open
// container grows, and it is never an element of a container that grows while it is open.
Json* JsonWriter::put(Json v) {
  if (open_.empty()) {
    if (root_) throw Error("JsonWriter: a second value after the document is complete");
    root_ = std::make_unique<Json>(std::move(v));
    return root_.get();
  }
  Json& parent = *open_.back();
  if (parent.is_array()) {
    parent.push_back(std::move(v));
    return &parent.back();
  }
  if (!key_) throw Error("JsonWriter: a value inside an object needs a key first");
  const std::string k = std::move(*key_);
  key_.reset();
  if (parent.contains(k)) throw Error("JsonWriter: duplicate key '" + k + "'");
  Json& slot = parent[k];
  slot = std::move(v);
  return &slot;
}

JsonWriter& JsonWriter::begin_object() {
  open_.push_back(put(Json::object()));
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (open_.empty() || !open_.back()->is_object()) throw Error("JsonWriter: end_object without begin_object");
  if (key_) throw Error("JsonWriter: key '" + *key_ + "' has no value");
  open_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  open_.push_back(put(Json::array()));
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (open_.empty() || !open_.back()->is_array()) throw Error("JsonWriter: end_array without begin_array");
  open_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(const std::string& k) {
  if (open_.empty() || !open_.back()->is_object()) throw Error("JsonWriter: key '" + k + "' outside an object");
  if (key_) throw Error("JsonWriter: key '" + k + "' follows key '" + *key_ + "', which has no value");
  key_ = k;
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  put(v);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t v) {
  put(v);
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t v) {
  put(v);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  put(v);
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& v) {
  put(v);
  return *this;
}

JsonWriter& JsonWriter::raw(const std::string& json) {
  Json parsed;
  try {
    parsed = Json::parse(json);
  } catch (const Json::parse_error& e) {
    throw Error(std::string("JsonWriter::raw: the text is not JSON: ") + e.what());
  }
  put(std::move(parsed));
  return *this;
}

std::string JsonWriter::str() const {
  if (!root_) return "";
  // Bytes that are not UTF-8 (a path given on the command line, say) become U+FFFD instead of
  // failing the whole file.
  return root_->dump(-1, ' ', false, Json::error_handler_t::replace);
}

void JsonWriter::write_file(const std::string& path) const {
  if (!open_.empty()) throw Error("JsonWriter: " + path + " written with unclosed containers");
  write_file_atomic(path, str() + '\n');
}

}  // namespace usp
