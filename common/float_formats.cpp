// convert_to_float / convert_from_float (declared in dtype.hpp): loops over the element codecs
// of float_formats.hpp, so a buffer converts exactly as a CUDA kernel using them would.
#include "common/float_formats.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "common/error.hpp"

namespace usp {
namespace {

template <class F>
void decode_all(const void* src, float* dst, std::size_t n) {
  const auto* in = static_cast<const typename F::Storage*>(src);
  for (std::size_t i = 0; i < n; ++i) dst[i] = decode_float<F>(in[i]);
}

template <class F>
void encode_all(const float* src, void* dst, std::size_t n) {
  auto* out = static_cast<typename F::Storage*>(dst);
  for (std::size_t i = 0; i < n; ++i) out[i] = encode_float<F>(src[i]);
}

// float -> int32 rounds to nearest, ties to even, like every other conversion here. A value
// with no int32 (NaN, inf, out of range) is a bug upstream: converting it silently would be
// undefined behaviour in C++ and a wrong token id or index downstream.
void floats_to_int32(const float* src, std::int32_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float r = std::nearbyint(src[i]);  // default rounding mode: nearest even
    if (!(r >= -2147483648.0f && r < 2147483648.0f))
      throw Error("convert_from_float: element " + std::to_string(i) + " (" +
                  std::to_string(src[i]) + ") has no int32 value");
    dst[i] = static_cast<std::int32_t>(r);
  }
}

}  // namespace

void convert_to_float(DType src_type, const void* src, float* dst, std::size_t n) {
  if (n == 0) return;
  USP_CHECK(src != nullptr && dst != nullptr, "convert_to_float: null buffer");
  switch (src_type) {
    case DType::f32: std::memmove(dst, src, n * sizeof(float)); return;
    case DType::bf16: decode_all<Bf16Format>(src, dst, n); return;
    case DType::f16: decode_all<F16Format>(src, dst, n); return;
    case DType::e4m3: decode_all<E4m3Format>(src, dst, n); return;
    case DType::e5m2: decode_all<E5m2Format>(src, dst, n); return;
    case DType::i32: {
      // Exact below 2^24 in magnitude, rounded to nearest beyond.
      const auto* in = static_cast<const std::int32_t*>(src);
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(in[i]);
      return;
    }
  }
  throw Error("convert_to_float: unknown dtype " + std::to_string(int(src_type)));
}

void convert_from_float(const float* src, DType dst_type, void* dst, std::size_t n) {
  if (n == 0) return;
  USP_CHECK(src != nullptr && dst != nullptr, "convert_from_float: null buffer");
  switch (dst_type) {
    case DType::f32: std::memmove(dst, src, n * sizeof(float)); return;
    case DType::bf16: encode_all<Bf16Format>(src, dst, n); return;
    case DType::f16: encode_all<F16Format>(src, dst, n); return;
    case DType::e4m3: encode_all<E4m3Format>(src, dst, n); return;
    case DType::e5m2: encode_all<E5m2Format>(src, dst, n); return;
    case DType::i32: floats_to_int32(src, static_cast<std::int32_t*>(dst), n); return;
  }
  throw Error("convert_from_float: unknown dtype " + std::to_string(int(dst_type)));
}

}  // namespace usp
