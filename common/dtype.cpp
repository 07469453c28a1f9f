#include "common/dtype.hpp"

#include "common/enum_names.hpp"
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

namespace {
constexpr EnumNames<DType, 6> kDTypeNames{{{{DType::f32, "f32"},
                                            {DType::bf16, "bf16"},
                                            {DType::f16, "f16"},
                                            {DType::e4m3, "e4m3"},
                                            {DType::e5m2, "e5m2"},
                                            {DType::i32, "i32"}}}};
}  // namespace

const char* dtype_name(DType t) { return kDTypeNames.name(t); }
DType parse_dtype(const std::string& s) { return kDTypeNames.parse(s, "dtype"); }

bool dtype_is_float(DType t) { return t != DType::i32; }

}  // namespace usp
