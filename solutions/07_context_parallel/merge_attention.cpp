// Exercise 07.1, solution: merging partial attention results by their log-sum-exp, and the
// gradient of the merge (the contract and the idea: chapters/07_context_parallel/merge_attention.hpp).
#include "chapters/07_context_parallel/merge_attention.hpp"

#include <cmath>
#include <limits>

#include "common/dtype.hpp"
#include "common/error.hpp"

namespace usp::ch07 {

namespace {

constexpr float kNone = -std::numeric_limits<float>::infinity();

// A float tensor's values as f32 (a Temporary copy for bf16), and the way back.
Tensor widened(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor w = Tensor::empty(t.shape(), DType::f32, MemCategory::Temporary);
  convert_to_float(t.dtype(), t.raw(), w.data<float>(), static_cast<std::size_t>(t.numel()));
  return w;
}

void store(const Tensor& f32, Tensor& dst) {
  if (dst.dtype() == DType::f32) {
    if (f32.raw() != dst.raw()) dst.copy_from(f32);
    return;
  }
  convert_from_float(f32.data<float>(), dst.dtype(), dst.raw(), static_cast<std::size_t>(dst.numel()));
}

}  // namespace

void merge_partial_attention(Tensor& out, Tensor& lse, const Tensor& block_out, const Tensor& block_lse) {
  const std::int64_t B = out.dim(0), T = out.dim(1), H = out.dim(2), D = out.dim(3);
  Tensor o = widened(out);
  const Tensor ob = widened(block_out);
  float* op = o.data<float>();
  const float* bp = ob.data<float>();
  float* l = lse.data<float>();
  const float* lb = block_lse.data<float>();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < T; ++t) {
        float& la = l[(b * H + h) * T + t];
        const float lbt = lb[(b * H + h) * T + t];
        if (lbt == kNone) continue;  // the block saw nothing for this row: nothing to add
        // lse = log(e^la + e^lb), written around the larger one so nothing overflows.
        const float m = la == kNone ? lbt : std::max(la, lbt);
        const float merged = m + std::log(std::exp(la - m) + std::exp(lbt - m));
        const float wa = la == kNone ? 0.0f : std::exp(la - merged), wb = std::exp(lbt - merged);
        float* oa = op + ((b * T + t) * H + h) * D;
        const float* obt = bp + ((b * T + t) * H + h) * D;
        for (std::int64_t e = 0; e < D; ++e) oa[e] = wa * oa[e] + wb * obt[e];
        la = merged;
      }
  store(o, out);
}

void merge_partial_attention_backward(const Tensor& dout, const Tensor& out, const Tensor& lse,
                                      const Tensor& block_out, const Tensor& block_lse, Tensor& dblock_out,
                                      Tensor& dblock_lse) {
  const std::int64_t B = out.dim(0), T = out.dim(1), H = out.dim(2), D = out.dim(3);
  const Tensor d = widened(dout), o = widened(out), ob = widened(block_out);
  Tensor dob = dblock_out.dtype() == DType::f32 ? dblock_out
                                                 : Tensor::empty(dblock_out.shape(), DType::f32, MemCategory::Temporary);
  const float *dp = d.data<float>(), *op = o.data<float>(), *bp = ob.data<float>();
  const float *l = lse.data<float>(), *lb = block_lse.data<float>();
  float* dbo = dob.data<float>();
  float* dbl = dblock_lse.data<float>();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t row = (b * H + h) * T + t;
        const std::int64_t at = ((b * T + t) * H + h) * D;
        if (lb[row] == kNone) {  // the block contributed nothing: no gradient flows to it
          for (std::int64_t e = 0; e < D; ++e) dbo[at + e] = 0.0f;
          dbl[row] = 0.0f;
          continue;
        }
        // out = Σ_b w_b·out_b with w_b = e^(lse_b - lse): dout_b = w_b·dout, and moving lse_b moves
        // every weight: dlse_b = w_b·(dout·out_b - dout·out).
        const float w = std::exp(lb[row] - l[row]);
        float dot_block = 0.0f, dot_out = 0.0f;
        for (std::int64_t e = 0; e < D; ++e) {
          dbo[at + e] = w * dp[at + e];
          dot_block += dp[at + e] * bp[at + e];
          dot_out += dp[at + e] * op[at + e];
        }
        dbl[row] = w * (dot_block - dot_out);
      }
  store(dob, dblock_out);
}

}  // namespace usp::ch07
