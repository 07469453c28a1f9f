#include "chapters/07_context_parallel/token_rows.hpp"

#include <cstring>

#include "common/dtype.hpp"
#include "common/error.hpp"

namespace usp::ch07 {

namespace {

// Elements per token: the product of the dimensions after [B, T].
std::int64_t per_token(const Tensor& x) {
  std::int64_t n = 1;
  for (int i = 2; i < x.ndim(); ++i) n *= x.dim(i);
  return n;
}

}  // namespace

Tensor take_tokens(const Tensor& x, std::int64_t t0, std::int64_t n, DType dtype) {
  const std::int64_t B = x.dim(0), T = x.dim(1), X = per_token(x);
  USP_CHECK(t0 >= 0 && t0 + n <= T, "take_tokens: tokens [" + std::to_string(t0) + ", " + std::to_string(t0 + n) +
                                        ") outside the " + std::to_string(T) + " held");
  Shape shape = x.shape();
  shape[1] = n;
  Tensor out = Tensor::empty(shape, dtype, MemCategory::Temporary);
  const std::size_t in_size = dtype_size(x.dtype()), out_size = dtype_size(dtype);
  for (std::int64_t b = 0; b < B; ++b) {
    const char* src = static_cast<const char*>(x.raw()) + static_cast<std::size_t>((b * T + t0) * X) * in_size;
    char* dst = static_cast<char*>(out.raw()) + static_cast<std::size_t>(b * n * X) * out_size;
    const std::size_t count = static_cast<std::size_t>(n * X);
    if (x.dtype() == dtype)
      std::memcpy(dst, src, count * in_size);
    else if (dtype == DType::f32)
      convert_to_float(x.dtype(), src, reinterpret_cast<float*>(dst), count);
    else
      USP_CHECK(false, "take_tokens: converts to f32 or keeps the dtype");
  }
  return out;
}

void put_tokens(const Tensor& src, Tensor& dst, std::int64_t t0, bool add) {
  const std::int64_t B = dst.dim(0), T = dst.dim(1), X = per_token(dst), n = src.dim(1);
  USP_CHECK(src.dtype() == DType::f32 && src.numel() == B * n * X && t0 >= 0 && t0 + n <= T,
            "put_tokens: src must be f32 [B, n, ...] fitting at token " + std::to_string(t0));
  USP_CHECK(!add || dst.dtype() == DType::f32, "put_tokens: accumulates into f32 only");
  const float* s = src.data<float>();
  for (std::int64_t b = 0; b < B; ++b) {
    const float* from = s + b * n * X;
    const std::size_t at = static_cast<std::size_t>((b * T + t0) * X), count = static_cast<std::size_t>(n * X);
    if (dst.dtype() != DType::f32) {
      convert_from_float(from, dst.dtype(), static_cast<char*>(dst.raw()) + at * dtype_size(dst.dtype()), count);
      continue;
    }
    float* to = dst.data<float>() + at;
    for (std::size_t i = 0; i < count; ++i) to[i] = add ? to[i] + from[i] : from[i];
  }
}

}  // namespace usp::ch07
