// Rotary position embedding, Hugging Face's rotate-half convention, in place (see ops.hpp).
//   x [B, T, H, D], half = D/2; for i < half, angle(t, i) = pos(t) · theta^(-2i/D), pos(t) = t or
//   positions[t] (a rank's tokens of a sequence split by context parallelism):
//     forward   (x[i], x[i+half]) <- (x[i] cos - x[i+half] sin,  x[i+half] cos + x[i] sin)
//     backward  the transposed rotation: (g[i] cos + g[i+half] sin,  g[i+half] cos - g[i] sin)
// The angles, cosines and sines are computed in double and rounded once to f32, into a
// Temporary [T, half] table shared by the B·H rows of each position. No FLOPs counted.
#include <cmath>

#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif

namespace usp::ops {

using namespace detail;

namespace {

void rope_apply(const char* op, Tensor& x, double theta, const Tensor& positions, bool inverse) {
  check_float(op, "x", x);
  USP_CHECK(x.ndim() == 4 && x.dim(3) % 2 == 0 && x.dim(3) > 0,
            std::string("ops::") + op + ": x is " + shape_str(x.shape()) + ", expected [B, T, H, D] with D even");
  USP_CHECK(theta > 0, std::string("ops::") + op + ": theta must be positive, got " + std::to_string(theta));
  const std::int64_t b = x.dim(0), t = x.dim(1), h = x.dim(2), d = x.dim(3), half = d / 2;
  const std::int32_t* pos = nullptr;
  Tensor host_positions;
  if (positions.defined()) {
    check_i32(op, "positions", positions);
    check_numel(op, "positions", positions, t);
    host_positions = on_device(positions, Device::cpu());
    pos = host_positions.data<std::int32_t>();
    for (std::int64_t p = 0; p < t; ++p)
      USP_CHECK(pos[p] >= 0, std::string("ops::") + op + ": position " + std::to_string(pos[p]) + " at index " +
                                 std::to_string(p) + " is negative");
  }

  // cos and sin [T, half], one table each.
  Tensor table = Tensor::empty({2, t, half}, DType::f32, MemCategory::Temporary);
  float* cos_t = table.data<float>();
  float* sin_t = cos_t + t * half;
  for (std::int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    for (std::int64_t p = 0; p < t; ++p) {
      const double angle = static_cast<double>(pos ? pos[p] : p) * inv_freq;
      cos_t[p * half + i] = static_cast<float>(std::cos(angle));
      sin_t[p * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&x, &positions});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) return cuda_path::rope(x, table, inverse);
#endif
  // The transpose of a rotation by +angle is the rotation by -angle.
  const float sign = inverse ? -1.0f : 1.0f;

  FloatOut xf(x, true);
  float* xp = xf.data();
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t p = 0; p < t; ++p) {
      const float* cs = cos_t + p * half;
      const float* sn = sin_t + p * half;
      for (std::int64_t hi = 0; hi < h; ++hi) {
        float* lo = xp + ((bi * t + p) * h + hi) * d;
        float* up = lo + half;
        for (std::int64_t i = 0; i < half; ++i) {
          const float a = lo[i], c = up[i], s = sign * sn[i];
          lo[i] = a * cs[i] - c * s;
          up[i] = c * cs[i] + a * s;
        }
      }
    }
  xf.store();
}

}  // namespace

void rope_forward(Tensor& x, double theta, const Tensor& positions) {
  rope_apply("rope_forward", x, theta, positions, false);
}
void rope_backward(Tensor& dx, double theta, const Tensor& positions) {
  rope_apply("rope_backward", dx, theta, positions, true);
}

}  // namespace usp::ops
