#include "chapters/13_fused_kernels/bandwidth_bench.hpp"

#include <algorithm>
#include <sstream>

#include "common/device_timer.hpp"
#include "common/tensor.hpp"

namespace usp::ch13 {

VariantTiming timing_row(const Chain& chain, const Variant& cpu_twin, int launches, double ms) {
  VariantTiming t;
  t.chain_id = chain.id;
  t.chain = chain.name;
  t.variant = cpu_twin.name;
  t.passes = launches;
  t.bytes = cpu_twin.bytes();
  t.scratch_bytes = cpu_twin.scratch_bytes();
  t.ms = ms;
  t.gb_per_s = static_cast<double>(t.bytes) / (t.ms * 1e6);
  return t;
}

double copy_bandwidth_gb_per_s(std::int64_t bytes, int reps) {
  const std::int64_t n = std::max<std::int64_t>(1, bytes / 4);
  Tensor src = Tensor::empty({n}), dst = Tensor::empty({n});
  src.fill(1.0f);
  dst.fill(0.0f);
  // STREAM's "scale" kernel, y = s·x with s = 1 known only at run time: a copy the compiler cannot
  // turn into a memcpy call (glibc's memcpy of large buffers takes another path, non-temporal
  // stores, which is not what the chains' loops do).
  volatile float one = 1.0f;
  const float s = one;
  const float* x = src.data<float>();
  float* y = dst.data<float>();
  const double ms = median_ms([&] {
    for (std::int64_t i = 0; i < n; ++i) y[i] = s * x[i];
  }, reps);
  return 2.0 * static_cast<double>(n) * 4.0 / (ms * 1e6);
}

std::vector<VariantTiming> bench_chains(const std::vector<std::string>& ids, const ChainSizes& sizes, int reps) {
  std::vector<VariantTiming> out;
  for (const std::string& id : ids) {
    const Chain chain = make_chain(id, sizes);
    for (const Variant& v : chain.variants) {
      chain.reset();
      v.run();  // warm-up: the scratch's pages are faulted in here, not in the timed runs
      const double ms = median_ms([&] { v.run(); }, reps, Device::cpu(), [&] { chain.reset(); });
      out.push_back(timing_row(chain, v, static_cast<int>(v.passes.size()), ms));
    }
  }
  return out;
}

}  // namespace usp::ch13
