// Element-wise updates in place (see ops.hpp): y += x and y *= s. No FLOPs counted.
#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

namespace usp::ops {

using namespace detail;

void add_inplace(Tensor& y, const Tensor& x) {
  const char* op = "add_inplace";
  require_cpu(op, {&y, &x});
  check_float(op, "y", y);
  check_float(op, "x", x);
  check_numel(op, "x", x, y.numel());
  FloatIn xf(x);
  FloatOut yf(y, true);
  const float* xp = xf.data();
  float* yp = yf.data();
  const std::int64_t n = y.numel();
  for (std::int64_t i = 0; i < n; ++i) yp[i] += xp[i];
  yf.store();
}

void scale_inplace(Tensor& y, float s) {
  const char* op = "scale_inplace";
  require_cpu(op, {&y});
  check_float(op, "y", y);
  FloatOut yf(y, true);
  float* yp = yf.data();
  const std::int64_t n = y.numel();
  for (std::int64_t i = 0; i < n; ++i) yp[i] *= s;
  yf.store();
}

}  // namespace usp::ops
