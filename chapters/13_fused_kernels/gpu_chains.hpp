// The chains on a GPU: each chain's tensors copied to the device and the CUDA kernels of
// kernels/fused run on them — the fused variant of every chain (the same passes as the CPU's
// fused variant), and the unfused residual + RMSNorm forward (its six launches). The bytes of a
// GPU variant are those the CPU variant of the same name counts: the kernels read and write the
// same tensors (the fused norm backward adds each row into dw with an atomic, which L2 absorbs).
// CUDA builds with a visible GPU only; elsewhere gpu_chains_available() is false and the rest
// throws usp::Error.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/bandwidth_bench.hpp"
#include "chapters/13_fused_kernels/chains.hpp"

namespace usp::ch13 {

bool gpu_chains_available();

struct GpuVariant {
  std::string name;  // "fused" or "unfused", as the CPU variant whose bytes it moves
  int launches = 0;
  std::function<void()> run;
};

// A chain on the GPU: device copies of its inputs and outputs (outputs[i] mirrors
// chain.outputs[i]) and the variants that have CUDA kernels.
struct GpuChain {
  std::vector<Tensor> inputs, outputs, scratch;
  std::vector<GpuVariant> variants;
  // Copies the chain's host inputs and outputs (after chain.reset()) to the device.
  void upload(const Chain& chain);
};
GpuChain gpu_chain(const Chain& chain, const ChainSizes& sizes);

// The mean launch overhead of an empty kernel over `launches` back-to-back launches, in µs, and
// the device's name.
double gpu_launch_overhead_us(int launches);
std::string gpu_device_name();

// The device-to-device copy of `bytes` bytes (cudaMemcpy), median of `reps`, as 2 · bytes / time.
double gpu_copy_bandwidth_gb_per_s(std::int64_t bytes, int reps);
// Each GPU variant of the chains `ids`, timed as bench_chains times the CPU ones (one warm-up run,
// the median of `reps`, the device synchronised around each run), with the CPU variant's bytes.
std::vector<VariantTiming> bench_chains_gpu(const std::vector<std::string>& ids, const ChainSizes& sizes, int reps);

}  // namespace usp::ch13
