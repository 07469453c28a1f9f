#include "chapters/07_context_parallel/token_rows.hpp"

#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch07 {

namespace {

// Elements per token: the product of the dimensions after [B, T].
std::int64_t per_token(const Tensor& x) {
  std::int64_t n = 1;
  for (int i = 2; i < x.ndim(); ++i) n *= x.dim(i);
  return n;
}

// Sequence b's tokens [t0, t0 + n) of x [B, T, ...] as a flat view (they are contiguous).
Tensor tokens_of(const Tensor& x, std::int64_t b, std::int64_t t0, std::int64_t n) {
  const std::int64_t X = per_token(x);
  return x.view((b * x.dim(1) + t0) * X, {n * X});
}

}  // namespace

// Sequence by sequence, a contiguous run of n·X elements each: copies (or dtype conversions) of
// views, so the same code serves tensors on the CPU and on a GPU.
Tensor take_tokens(const Tensor& x, std::int64_t t0, std::int64_t n, DType dtype) {
  const std::int64_t B = x.dim(0), T = x.dim(1);
  USP_CHECK(t0 >= 0 && t0 + n <= T, "take_tokens: tokens [" + std::to_string(t0) + ", " + std::to_string(t0 + n) +
                                        ") outside the " + std::to_string(T) + " held");
  USP_CHECK(x.dtype() == dtype || dtype == DType::f32, "take_tokens: converts to f32 or keeps the dtype");
  Shape shape = x.shape();
  shape[1] = n;
  Tensor out = Tensor::empty(shape, dtype, MemCategory::Temporary, x.device());
  for (std::int64_t b = 0; b < B; ++b) {
    Tensor to = tokens_of(out, b, 0, n);
    if (x.dtype() == dtype)
      to.copy_from(tokens_of(x, b, t0, n));
    else
      ops::convert(tokens_of(x, b, t0, n), to);
  }
  return out;
}

void put_tokens(const Tensor& src, Tensor& dst, std::int64_t t0, bool add) {
  const std::int64_t B = dst.dim(0), T = dst.dim(1), X = per_token(dst), n = src.dim(1);
  USP_CHECK(src.dtype() == DType::f32 && src.numel() == B * n * X && t0 >= 0 && t0 + n <= T,
            "put_tokens: src must be f32 [B, n, ...] fitting at token " + std::to_string(t0));
  USP_CHECK(!add || dst.dtype() == DType::f32, "put_tokens: accumulates into f32 only");
  for (std::int64_t b = 0; b < B; ++b) {
    Tensor to = tokens_of(dst, b, t0, n);
    const Tensor from = tokens_of(src, b, 0, n);
    if (add)
      ops::add_inplace(to, from);
    else if (dst.dtype() == DType::f32)
      to.copy_from(from);
    else
      ops::convert(from, to);  // rounded to nearest even
  }
}

}  // namespace usp::ch07
