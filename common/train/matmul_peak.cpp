#include "common/train/matmul_peak.hpp"

#include <algorithm>
#include <chrono>

#include "common/ops/ops.hpp"
#include "common/tensor.hpp"

namespace usp {

double matmul_peak_flops(Device device) {
  constexpr std::int64_t n = 1024;
  const DType dt = device.is_cpu() ? DType::f32 : DType::bf16;
  Tensor x = Tensor::empty({n, n}, dt, MemCategory::Temporary, device), w = Tensor::empty({n, n}, dt, MemCategory::Temporary, device);
  Tensor y = Tensor::empty({n, n}, dt, MemCategory::Temporary, device);
  x.fill(0.5f);
  w.fill(0.25f);
  double best = 1e300;
  for (int run = 0; run < 6; ++run) {
    synchronize(device);
    const auto t0 = std::chrono::steady_clock::now();
    ops::matmul_forward(x, w, y);
    synchronize(device);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run > 0) best = std::min(best, s);  // run 0 warms up
  }
  return 2.0 * n * n * n / best;
}

}  // namespace usp
