// AdamW with the update written out as PyTorch's torch.optim.AdamW computes it (decay first,
// then the bias-corrected Adam step), so a reference run in PyTorch follows the same path.
#include "common/optim/adamw.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "common/dtype.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/op_kernels.hpp"
#endif

namespace usp {

AdamW::AdamW(const ParamStore& params, AdamWConfig config, std::int64_t begin, std::int64_t end)
    : AdamW(params.infos(), config, begin, end < 0 ? params.numel() : end,
            params.flat().defined() ? params.flat().slice(begin, end < 0 ? params.numel() : end) : Tensor()) {
  USP_CHECK(end_ <= params.numel(),
            "AdamW: range [" + std::to_string(begin_) + ", " + std::to_string(end_) + ") outside the parameters");
}

AdamW::AdamW(const std::vector<ParamInfo>& infos, AdamWConfig config, std::int64_t begin, std::int64_t end,
             const Tensor& values)
    : config_(config), begin_(begin), end_(end) {
  if (!(config_.lr > 0)) throw UsageError("--lr must be > 0");
  USP_CHECK(0 <= begin_ && begin_ <= end_,
            "AdamW: range [" + std::to_string(begin_) + ", " + std::to_string(end_) + ") is not a range");
  const std::int64_t n = end_ - begin_;
  const Device device = values.defined() ? values.device() : Device::cpu();
  m_ = Tensor::zeros({n}, DType::f32, MemCategory::OptimizerState, device);
  v_ = Tensor::zeros({n}, DType::f32, MemCategory::OptimizerState, device);
  if (values.defined() && values.dtype() != DType::f32) {
    // fp32 master weights: the parameters' values widened once; updates happen here.
    USP_CHECK(values.numel() == n, "AdamW: the range's values hold " + std::to_string(values.numel()) +
                                       " elements, expected " + std::to_string(n));
    master_ = Tensor::empty({n}, DType::f32, MemCategory::OptimizerState, device);
    if (n > 0) {
#if defined(USP_HAVE_CUDA)
      if (device.is_cuda())
        ops::cuda_kernels::widen(values.dtype(), values.raw(), master_.data<float>(), n);
      else
#endif
        convert_to_float(values.dtype(), values.raw(), master_.data<float>(), static_cast<std::size_t>(n));
    }
  }
  for (const ParamInfo& p : infos) {
    if (p.is_norm) continue;
    const std::int64_t lo = std::max(begin_, p.offset), hi = std::min(end_, p.offset + p.numel);
    if (lo < hi) decayed_.emplace_back(lo - begin_, hi - begin_);
  }
}

void AdamW::step(ParamStore& params) {
  USP_CHECK(params.has_grads(), "AdamW::step: the parameter store has no gradients");
  step_range(params.flat().slice(begin_, end_), params.flat_grad().slice(begin_, end_));
}

void AdamW::step_range(Tensor params_range, const Tensor& grads_range) {
  const std::int64_t n = end_ - begin_;
  USP_CHECK(params_range.numel() == n && grads_range.numel() == n,
            "AdamW::step_range: expected " + std::to_string(n) + " elements, got params " +
                std::to_string(params_range.numel()) + " and grads " + std::to_string(grads_range.numel()));
  USP_CHECK(params_range.device() == m_.device() && grads_range.device() == m_.device(),
            "AdamW::step_range: parameters on " + params_range.device().str() + ", gradients on " +
                grads_range.device().str() + ", optimizer states on " + m_.device().str());
  ++t_;
  const float lr = static_cast<float>(config_.lr), b1 = static_cast<float>(config_.beta1),
              b2 = static_cast<float>(config_.beta2), eps = static_cast<float>(config_.eps);
  const float decay = 1.0f - lr * static_cast<float>(config_.weight_decay);
  const double bc1 = 1.0 - std::pow(config_.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(config_.beta2, static_cast<double>(t_));
  const float step_size = static_cast<float>(config_.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));

  // The fp32 values the update reads and writes: the master copy, or the parameters themselves.
  const bool narrow = master_.defined();
  float* w = narrow ? master_.data<float>() : params_range.data<float>();
  float* m = m_.data<float>();
  float* v = v_.data<float>();

#if defined(USP_HAVE_CUDA)
  if (params_range.device().is_cuda()) {
    // The same two passes as below, as kernels: the decay over the decayed ranges, then the
    // step (op_bodies.hpp's adamw), which widens narrow gradients as it reads them.
    for (const auto& [lo, hi] : decayed_) ops::cuda_kernels::scale(decay, w + lo, hi - lo);
    ops::cuda_kernels::adamw({b1, b2, eps, step_size, bc2_sqrt}, grads_range.dtype(), grads_range.raw(), w,
                             m_.data<float>(), v_.data<float>(), n);
    if (narrow) ops::cuda_kernels::narrow(w, params_range.dtype(), params_range.raw(), n);
    return;
  }
#endif
  for (const auto& [lo, hi] : decayed_)
    for (std::int64_t i = lo; i < hi; ++i) w[i] *= decay;
  // Narrow gradients are widened a block at a time on the stack, so the step allocates nothing:
  // mixed precision's memory is its 16 bytes per parameter at the optimizer step too.
  constexpr std::int64_t kBlock = 1024;
  float g_block[kBlock];
  const bool wide = grads_range.dtype() == DType::f32;
  const std::size_t g_size = dtype_size(grads_range.dtype());
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t len = std::min(kBlock, n - b);
    const float* g = nullptr;
    if (wide) {
      g = grads_range.data<float>() + b;
    } else {
      convert_to_float(grads_range.dtype(), static_cast<const std::byte*>(grads_range.raw()) + static_cast<std::size_t>(b) * g_size, g_block,
                       static_cast<std::size_t>(len));
      g = g_block;
    }
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t i = b + k;
      m[i] = b1 * m[i] + (1.0f - b1) * g[k];
      v[i] = b2 * v[i] + (1.0f - b2) * g[k] * g[k];
      const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      w[i] -= step_size * m[i] / denom;
    }
  }
  if (narrow) convert_from_float(w, params_range.dtype(), params_range.raw(), static_cast<std::size_t>(n));
}

}  // namespace usp
