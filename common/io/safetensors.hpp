// Safetensors files (https://huggingface.co/docs/safetensors, the format Hugging Face stores
// weights in), written and read byte for byte as the format says:
//
//   bytes [0, 8)        N, the header length, unsigned 64-bit little-endian
//   bytes [8, 8 + N)    the header, UTF-8 JSON:
//                         {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
//                          ..., "__metadata__": {"<key>": "<string value>", ...}}
//                       padded with spaces (0x20) so that 8 + N is a multiple of 8
//   bytes [8 + N, end)  the data buffer: each tensor's elements, row-major, little-endian, at
//                       [b, e) counted from the buffer's first byte; e - b = numel · dtype size;
//                       the tensors tile the buffer with no holes and no overlaps.
//
// Dtypes: F32, BF16, F16, I32, F8_E4M3 (OCP E4M3FN, torch.float8_e4m3fn), F8_E5M2 — the
// course's DType values. A file holding other dtypes (F64, I64, U8, BOOL ...) is refused.
// This code assumes a little-endian host (x86-64, AArch64), which it checks.
//
// Files are written to "<path>.tmp" and renamed into place, so a crash mid-write never leaves
// a truncated file under the real name. A file that is missing, truncated or malformed when
// read throws usp::UsageError naming the file and the problem (it is the user's input).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.hpp"

namespace usp {

const char* safetensors_dtype_name(DType t);              // "F32", "BF16", ...
bool parse_safetensors_dtype(const std::string& name, DType& out);  // false if not ours

// A tensor to write: its name and its values (any device; CUDA tensors are staged on the host).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Writes the tensors in the order given, data contiguous in that order. Names must be unique,
// non-empty and not "__metadata__". Throws usp::Error if the file cannot be written.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// One tensor's header entry.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets into the data buffer
};

// An opened file: the header is parsed and checked against the file's size at construction;
// tensor data is read on demand.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  // In header order (the order the writer listed them).
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::uint64_t data_offset() const { return data_offset_; }  // 8 + N

  bool has(const std::string& name) const;
  // UsageError "safetensors file 'p' has no tensor 'name'" when absent.
  const SafetensorsEntry& entry(const std::string& name) const;

  // A new CPU tensor holding the stored values in the stored dtype and shape.
  Tensor read(const std::string& name, MemCategory category = MemCategory::Temporary) const;
  // Reads into dst (any device); dtype and shape must match the entry exactly, else
  // UsageError naming the tensor, what the file holds and what dst expects.
  void read_into(const std::string& name, const Tensor& dst) const;

 private:
  void read_bytes(const SafetensorsEntry& e, void* host_dst) const;

  std::string path_;
  std::uint64_t file_size_ = 0;
  std::uint64_t data_offset_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace usp
