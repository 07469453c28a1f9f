// Element types a tensor can hold. Low-precision types are stored as their bit patterns
// (uint16_t for bf16/f16, uint8_t for fp8); float_formats.hpp converts them to and from float.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace usp {

enum class DType : unsigned char { f32, bf16, f16, e4m3, e5m2, i32 };

std::size_t dtype_size(DType t);        // bytes per element: 4, 2, 2, 1, 1, 4
const char* dtype_name(DType t);        // "f32", "bf16", "f16", "e4m3", "e5m2", "i32"
DType parse_dtype(const std::string&);  // inverse of dtype_name; UsageError otherwise
bool dtype_is_float(DType t);           // every type but i32

// The C++ type a tensor of this dtype hands out from Tensor::data<T>().
template <class T> constexpr bool dtype_matches(DType t);
template <> constexpr bool dtype_matches<float>(DType t) { return t == DType::f32; }
template <> constexpr bool dtype_matches<std::int32_t>(DType t) { return t == DType::i32; }
template <> constexpr bool dtype_matches<std::uint16_t>(DType t) { return t == DType::bf16 || t == DType::f16; }
template <> constexpr bool dtype_matches<std::uint8_t>(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

// Element-wise conversion between any dtype's storage and float (round-to-nearest-even,
// saturating to the format's largest finite value for fp8, NaN preserved). n elements.
void convert_to_float(DType src_type, const void* src, float* dst, std::size_t n);
void convert_from_float(const float* src, DType dst_type, void* dst, std::size_t n);

}  // namespace usp
