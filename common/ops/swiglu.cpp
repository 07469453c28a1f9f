// SwiGLU's gate, element-wise (see ops.hpp). With s = sigmoid(g) = 1 / (1 + e^-g):
//   forward   z  = g · s · u
//   backward  dg = dz · u · s · (1 + g · (1 - s))     (d silu/dg = s + g · s · (1 - s))
//             du = dz · g · s
// The sigmoid is recomputed in backward rather than saved. Element-wise: no FLOPs counted.
#include <utility>

#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif
#include "common/ops/simd_math.hpp"

namespace usp::ops {

using namespace detail;

namespace {

USP_SIMD_CLONES void swiglu_forward_loop(const float* g, const float* u, float* z, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float s = 1.0f / (1.0f + exp_approx(-g[i]));
    z[i] = g[i] * s * u[i];
  }
}

USP_SIMD_CLONES void swiglu_backward_loop(const float* dz, const float* g, const float* u, float* dg, float* du,
                                          std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = g[i];
    const float s = 1.0f / (1.0f + exp_approx(-x));
    dg[i] = dz[i] * u[i] * s * (1.0f + x * (1.0f - s));
    du[i] = dz[i] * x * s;
  }
}

}  // namespace

void swiglu_forward(const Tensor& g, const Tensor& u, Tensor& z) {
  const char* op = "swiglu_forward";
  check_float(op, "g", g);
  check_float(op, "u", u);
  check_float(op, "z", z);
  check_shape(op, "u", u, g.shape());
  check_shape(op, "z", z, g.shape());
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&g, &u, &z});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::swiglu_forward(g, u, z);
    return;
  }
#endif

  FloatIn gf(g), uf(u);
  FloatOut zf(z, false);
  swiglu_forward_loop(gf.data(), uf.data(), zf.data(), g.numel());
  zf.store();
}

void swiglu_backward(const Tensor& dz, const Tensor& g, const Tensor& u, Tensor& dg, Tensor& du) {
  const char* op = "swiglu_backward";
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"dz", &dz}, {"g", &g}, {"u", &u},
                                {"dg", &dg}, {"du", &du}}) {
    check_float(op, name, *t);
    check_shape(op, name, *t, g.shape());
  }
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&dz, &g, &u, &dg, &du});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::swiglu_backward(dz, g, u, dg, du);
    return;
  }
#endif

  FloatIn dzf(dz), gf(g), uf(u);
  FloatOut dgf(dg, false), duf(du, false);
  swiglu_backward_loop(dzf.data(), gf.data(), uf.data(), dgf.data(), duf.data(), g.numel());
  dgf.store();
  duf.store();
}

}  // namespace usp::ops
