#include "common/train/matmul_peak.hpp"

#include <algorithm>
#include <vector>

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
  const std::vector<double> ms = run_times_ms([&] { ops::matmul_forward(x, w, y); }, kPeakRuns, device);
  return 2.0 * n * n * n / (*std::min_element(ms.begin(), ms.end()) * 1e-3);
}

}  // namespace usp
