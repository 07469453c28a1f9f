// CUDA-event timing (event_timer.hpp).
#include "chapters/11_gpu_primer/event_timer.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "common/error.hpp"

namespace usp::ch11 {

std::vector<double> time_launches(const std::function<void()>& launch, int warmup, int iters) {
  if (warmup < 0 || iters < 1) throw Error("time_launches: needs warmup >= 0 and iters >= 1");
  const cudaStream_t stream = cuda::compute_stream();
  for (int i = 0; i < warmup; ++i) launch();

  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(iters));
  for (auto& e : events) USP_CUDA_CHECK(cudaEventCreate(&e));
  std::vector<double> ms(static_cast<std::size_t>(iters));
  try {
    for (int i = 0; i < iters; ++i) {
      USP_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
      launch();
      USP_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
    }
    USP_CUDA_CHECK(cudaEventSynchronize(events.back()));
    for (int i = 0; i < iters; ++i) {
      float elapsed = 0.0f;
      USP_CUDA_CHECK(cudaEventElapsedTime(&elapsed, events[2 * i], events[2 * i + 1]));
      ms[static_cast<std::size_t>(i)] = elapsed;
    }
  } catch (...) {
    for (auto& e : events) (void)cudaEventDestroy(e);
    throw;
  }
  for (auto& e : events) USP_CUDA_CHECK(cudaEventDestroy(e));
  return ms;
}

}  // namespace usp::ch11
