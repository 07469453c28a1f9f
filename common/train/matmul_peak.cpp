#include "common/train/matmul_peak.hpp"

#include "common/device_timer.hpp"
#include "common/memory_tracker.hpp"
#include "common/ops/ops.hpp"
#include "common/tensor.hpp"

namespace usp {

double matmul_peak_flops(Device device) {
  constexpr std::int64_t n = 1024;
  const MemoryTracker::Unmeasured off_the_books;  // 3 n² scratch elements: no chapter's memory
  const DType dt = device.is_cpu() ? DType::f32 : DType::bf16;
  Tensor x = Tensor::empty({n, n}, dt, MemCategory::Temporary, device), w = Tensor::empty({n, n}, dt, MemCategory::Temporary, device);
  Tensor y = Tensor::empty({n, n}, dt, MemCategory::Temporary, device);
  x.fill(0.5f);
  w.fill(0.25f);
  ops::matmul_forward(x, w, y);  // warm-up (cuBLAS's first call picks its kernel)
  const double ms = median_ms([&] { ops::matmul_forward(x, w, y); }, 5, device);
  return 2.0 * n * n * n / (ms * 1e-3);
}

}  // namespace usp
