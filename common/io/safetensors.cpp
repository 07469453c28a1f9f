#include "common/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/io/input_file.hpp"
#include "common/io/json_value.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"

namespace usp {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this code writes host memory as it is");

namespace {

// The Rust reference implementation refuses headers above 100 MB; so do we (a corrupt length
// field must not make us allocate gigabytes).
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {
    {DType::f32, "F32"},      {DType::bf16, "BF16"},     {DType::f16, "F16"},
    {DType::i32, "I32"},      {DType::e4m3, "F8_E4M3"},  {DType::e5m2, "F8_E5M2"},
};

std::string quoted(const std::string& path) { return "safetensors file '" + path + "'"; }

void put_u64_le(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::uint64_t get_u64_le(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  for (const auto& d : kDTypeNames)
    if (d.dtype == t) return d.name;
  throw Error("safetensors: no name for dtype " + std::string(dtype_name(t)));
}

bool parse_safetensors_dtype(const std::string& name, DType& out) {
  for (const auto& d : kDTypeNames)
    if (name == d.name) {
      out = d.dtype;
      return true;
    }
  return false;
}

// ---- writing -------------------------------------------------------------------------------

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::set<std::string> seen;
  for (const auto& t : tensors) {
    USP_CHECK(!t.name.empty() && t.name != "__metadata__", "write_safetensors: invalid tensor name '" + t.name + "'");
    USP_CHECK(seen.insert(t.name).second, "write_safetensors: duplicate tensor name '" + t.name + "'");
    USP_CHECK(t.tensor.defined(), "write_safetensors: tensor '" + t.name + "' is undefined");
  }

  JsonWriter header;
  header.begin_object();
  if (!metadata.empty()) {
    header.key("__metadata__").begin_object();
    for (const auto& [k, v] : metadata) header.field(k, v);
    header.end_object();
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::uint64_t bytes = t.tensor.nbytes();
    header.key(t.name).begin_object();
    header.field("dtype", safetensors_dtype_name(t.tensor.dtype()));
    header.key("shape").begin_array();
    for (std::int64_t d : t.tensor.shape()) header.value(d);
    header.end_array();
    header.key("data_offsets").begin_array().value(offset).value(offset + bytes).end_array();
    header.end_object();
    offset += bytes;
  }
  header.end_object();

  std::string json = header.str();
  json.append((8 - json.size() % 8) % 8, ' ');  // 8 + N stays a multiple of 8
  std::string prefix;
  put_u64_le(prefix, json.size());

  AtomicFile out(path);
  out.write(prefix);
  out.write(json);
  for (const auto& t : tensors) {
    if (t.tensor.nbytes() == 0) continue;
    if (t.tensor.device().is_cpu()) {
      out.write({static_cast<const char*>(t.tensor.raw()), t.tensor.nbytes()});
    } else {
      const Tensor host = t.tensor.to(Device::cpu(), MemCategory::Temporary);
      out.write({static_cast<const char*>(host.raw()), host.nbytes()});
    }
  }
  out.commit();
}

// ---- reading -------------------------------------------------------------------------------

namespace {

// The header's JSON text: the file starts with its length N (8 bytes, little-endian), then N
// bytes of header; me names the file in messages.
std::string read_header_text(const std::string& path, const std::string& me, std::uint64_t file_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(me + " could not be opened");
  if (file_size < 8)
    throw UsageError(me + " is truncated: " + std::to_string(file_size) + " bytes, less than the 8-byte header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  const std::uint64_t n = get_u64_le(len_bytes);
  if (n > kMaxHeaderBytes)
    throw UsageError(me + " is corrupt: header length " + std::to_string(n) + " exceeds the format's 100 MB limit");
  if (n > file_size - 8)
    throw UsageError(me + " is truncated: the header needs " + std::to_string(n) + " bytes but only " +
                     std::to_string(file_size - 8) + " follow the length field");
  std::string text(static_cast<std::size_t>(n), '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (static_cast<std::uint64_t>(in.gcount()) != n) throw UsageError(me + " could not be read");
  return text;
}

// The header's __metadata__: an object of strings.
std::map<std::string, std::string> parse_metadata(const std::string& me, const JsonValue& info) {
  if (!info.is_object()) throw UsageError(me + ": __metadata__ must be an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [k, v] : info.items()) {
    if (!v.is_string()) throw UsageError(me + ": __metadata__ value of '" + k + "' must be a string");
    metadata[k] = v.get<std::string>();
  }
  return metadata;
}

// One tensor's header entry {dtype, shape, data_offsets}, checked: a dtype we read, a shape
// whose bytes fit in 64 bits, offsets that hold exactly those bytes within the data_size bytes
// of data.
SafetensorsEntry parse_entry(const std::string& me, const std::string& name, const JsonValue& info,
                             std::uint64_t data_size) {
  const std::string where = me + ": tensor '" + name + "'";
  if (!info.is_object()) throw UsageError(where + ": entry must be an object");
  for (const auto& [k, v] : info.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      throw UsageError(where + ": unexpected key '" + k + "'");
  if (!info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
    throw UsageError(where + ": entry needs dtype, shape and data_offsets");
  const JsonValue& dt = info.at("dtype");
  const JsonValue& sh = info.at("shape");
  const JsonValue& off = info.at("data_offsets");

  SafetensorsEntry e;
  e.name = name;
  if (!dt.is_string()) throw UsageError(where + ": dtype must be a string");
  const std::string dtype_text = dt.get<std::string>();
  if (!parse_safetensors_dtype(dtype_text, e.dtype))
    throw UsageError(where + ": dtype " + dtype_text + " is not supported (F32, BF16, F16, I32, F8_E4M3, F8_E5M2)");

  if (!sh.is_array()) throw UsageError(where + ": shape must be an array");
  std::uint64_t numel = 1;
  bool overflow = false;
  for (const JsonValue& d : sh) {
    // nlohmann holds a non-negative integer literal as unsigned; "-1", "2.0", "1e3" are not.
    if (!d.is_number_unsigned()) throw UsageError(where + ": shape entries must be non-negative integers");
    const std::uint64_t dim = d.get<std::uint64_t>();
    if (dim > static_cast<std::uint64_t>(INT64_MAX)) overflow = true;
    if (dim != 0 && numel > UINT64_MAX / dim) overflow = true;
    numel *= dim;
    e.shape.push_back(static_cast<std::int64_t>(dim));
  }
  const std::uint64_t esize = dtype_size(e.dtype);
  if (overflow || numel > UINT64_MAX / esize) throw UsageError(where + ": shape is too large");

  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw UsageError(where + ": data_offsets must be [begin, end], two non-negative integers");
  e.begin = off[0].get<std::uint64_t>();
  e.end = off[1].get<std::uint64_t>();
  if (e.end < e.begin) throw UsageError(where + ": data_offsets end < begin");
  if (e.end - e.begin != numel * esize)
    throw UsageError(where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     ") hold " + std::to_string(e.end - e.begin) + " bytes, but shape " + shape_str(e.shape) +
                     " of " + dtype_text + " needs " + std::to_string(numel * esize));
  if (e.end > data_size)
    throw UsageError(me + " is truncated: tensor '" + name + "' needs data bytes [" + std::to_string(e.begin) +
                     ", " + std::to_string(e.end) + ") but the file holds " + std::to_string(data_size));
  return e;
}

// The tensors must tile the data buffer exactly: no holes, no overlaps, nothing after.
void check_tiling(const std::string& me, const std::vector<SafetensorsEntry>& entries, std::uint64_t data_size) {
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
                     return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
                   });
  std::uint64_t covered = 0;
  for (const SafetensorsEntry* e : by_offset) {
    if (e->begin != covered)
      throw UsageError(me + " is corrupt: tensor '" + e->name + "' starts at data byte " + std::to_string(e->begin) +
                       (e->begin < covered ? ", overlapping the previous tensor" : ", leaving a hole") +
                       " (expected " + std::to_string(covered) + ")");
    covered = e->end;
  }
  if (covered != data_size)
    throw UsageError(me + " is corrupt: " + std::to_string(data_size - covered) +
                     " bytes after the last tensor's data");
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const std::string me = quoted(path);
  require_input_file(path, "safetensors file");
  std::error_code ec;
  file_size_ = std::filesystem::file_size(path, ec);
  if (ec) throw UsageError(me + " could not be read: " + ec.message());
  const std::string text = read_header_text(path, me, file_size_);
  data_offset_ = 8 + text.size();
  const std::uint64_t data_size = file_size_ - data_offset_;

  if (text.empty() || text[0] != '{') throw UsageError(me + " is corrupt: the header does not start with '{'");
  const JsonValue root = parse_json(text, me + " header");
  for (const auto& [name, info] : root.items()) {
    if (name == "__metadata__") metadata_ = parse_metadata(me, info);
    else entries_.push_back(parse_entry(me, name, info, data_size));
  }
  check_tiling(me, entries_, data_size);
}

bool SafetensorsFile::has(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const SafetensorsEntry& e) { return e.name == name; });
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return e;
  throw UsageError(quoted(path_) + " has no tensor '" + name + "'");
}

void SafetensorsFile::read_bytes(const SafetensorsEntry& e, void* host_dst) const {
  const std::uint64_t bytes = e.end - e.begin;
  if (bytes == 0) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw UsageError(quoted(path_) + " could not be opened");
  in.seekg(static_cast<std::streamoff>(data_offset_ + e.begin));
  in.read(static_cast<char*>(host_dst), static_cast<std::streamsize>(bytes));
  if (static_cast<std::uint64_t>(in.gcount()) != bytes)
    throw UsageError(quoted(path_) + " is truncated: tensor '" + e.name + "' could not be read (did the file change?)");
}

Tensor SafetensorsFile::read(const std::string& name, MemCategory category) const {
  const SafetensorsEntry& e = entry(name);
  Tensor t = Tensor::empty(e.shape, e.dtype, category, Device::cpu());
  read_bytes(e, t.raw());
  return t;
}

void SafetensorsFile::read_into(const std::string& name, const Tensor& dst) const {
  const SafetensorsEntry& e = entry(name);
  if (e.dtype != dst.dtype() || e.shape != dst.shape())
    throw UsageError(quoted(path_) + ": tensor '" + name + "' is " + safetensors_dtype_name(e.dtype) + " " +
                     shape_str(e.shape) + ", expected " + safetensors_dtype_name(dst.dtype()) + " " +
                     shape_str(dst.shape()));
  if (dst.device().is_cpu()) {
    read_bytes(e, dst.raw());
  } else {
    const Tensor host = read(name, MemCategory::Temporary);
    Tensor(dst).copy_from(host);
  }
}

}  // namespace usp
