#include "common/dtype.hpp"

#include "common/error.hpp"

namespace usp {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return 4;
    case DType::bf16: case DType::f16: return 2;
    case DType::e4m3: case DType::e5m2: return 1;
  }
  throw Error("dtype_size: unknown dtype");
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
    case DType::i32: return "i32";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::e4m3, DType::e5m2, DType::i32})
    if (s == dtype_name(t)) return t;
  throw UsageError("unknown dtype '" + s + "' (expected f32, bf16, f16, e4m3, e5m2 or i32)");
}

bool dtype_is_float(DType t) { return t != DType::i32; }

}  // namespace usp
