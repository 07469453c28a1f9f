// Cross-entropy over the vocabulary, max-subtracted so e^x never overflows (see ops.hpp).
//   forward   loss = (1/N) Σ_n [ m_n + log Σ_v e^(x[n,v] - m_n) - x[n, target_n] ],  m_n = max_v x[n,v]
//             (each row's log and the mean in double)
//   backward  dlogits[n,v] = scale / N · (e^(x[n,v] - m_n) / Σ_v e^(x[n,v] - m_n) - [v = target_n])
// dlogits may be logits itself: each row is read before it is overwritten (the LM head can
// turn its saved logits into their gradient without a second [N, V] buffer).
// The LM head's matmul counts the FLOPs; the softmax is element-wise and adds none. Targets are
// checked before anything is computed or written.
#include <cmath>
#include <string>

#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif
#include "common/ops/simd_math.hpp"

namespace usp::ops {

using namespace detail;

namespace {

// logits [N, V] with N, V >= 1; targets [N] i32 within [0, V).
void check_args(const char* op, const Tensor& logits, const Tensor& targets) {
  check_float(op, "logits", logits);
  check_i32(op, "targets", targets);
  USP_CHECK(logits.ndim() == 2 && logits.dim(0) > 0 && logits.dim(1) > 0,
            std::string("ops::") + op + ": logits is " + shape_str(logits.shape()) + ", expected [N, V] with N, V >= 1");
  const std::int64_t n = logits.dim(0), v = logits.dim(1);
  check_numel(op, "targets", targets, n);
  const Tensor host_targets = on_device(targets, Device::cpu());
  const std::int32_t* tg = host_targets.data<std::int32_t>();
  for (std::int64_t i = 0; i < n; ++i)
    if (tg[i] < 0 || tg[i] >= v)
      throw Error(std::string("ops::") + op + ": target " + std::to_string(tg[i]) + " at row " +
                  std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(v) + ")");
}

// Σ_i e^(x[i] - m), in lanes.
USP_SIMD_CLONES float sum_exp(const float* x, float m, std::int64_t n) {
  float acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += exp_approx(x[i + l] - m);
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  for (; i < n; ++i) s += exp_approx(x[i] - m);
  return s;
}

// d[j] = k · e^(x[j] - max x) / Σ_j e^(x[j] - max x) over one row of n.
USP_SIMD_CLONES void scaled_softmax_row(const float* x, float* d, float k, std::int64_t n) {
  const float m = lane_max(x, n);
  for (std::int64_t j = 0; j < n; ++j) d[j] = exp_approx(x[j] - m);
  const float f = k / lane_sum(d, n);
  for (std::int64_t j = 0; j < n; ++j) d[j] *= f;
}

}  // namespace

double cross_entropy_forward(const Tensor& logits, const Tensor& targets) {
  const char* op = "cross_entropy_forward";
  check_args(op, logits, targets);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&logits, &targets});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) return cuda_path::cross_entropy_forward(logits, targets);
#endif
  const std::int64_t n = logits.dim(0), v = logits.dim(1);
  FloatIn lf(logits);
  const float* lp = lf.data();
  const std::int32_t* tg = targets.data<std::int32_t>();
  double total = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = lp + i * v;
    const float m = lane_max(row, v);
    const double lse = static_cast<double>(m) + std::log(static_cast<double>(sum_exp(row, m, v)));
    total += lse - static_cast<double>(row[tg[i]]);
  }
  return total / static_cast<double>(n);
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, Tensor& dlogits, float scale) {
  const char* op = "cross_entropy_backward";
  check_args(op, logits, targets);
  check_float(op, "dlogits", dlogits);
  check_shape(op, "dlogits", dlogits, logits.shape());
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&logits, &targets, &dlogits});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::cross_entropy_backward(logits, targets, dlogits, scale);
    return;
  }
#endif
  const std::int64_t n = logits.dim(0), v = logits.dim(1);
  FloatIn lf(logits);
  FloatOut df(dlogits, false);
  const float* lp = lf.data();
  float* dp = df.data();
  const std::int32_t* tg = targets.data<std::int32_t>();
  const float row_scale = scale / static_cast<float>(n);
  for (std::int64_t i = 0; i < n; ++i) {
    float* drow = dp + i * v;
    scaled_softmax_row(lp + i * v, drow, row_scale, v);
    drow[tg[i]] -= row_scale;
  }
  df.store();
}

}  // namespace usp::ops
