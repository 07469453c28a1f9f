#include "chapters/13_fused_kernels/gpu_chains.hpp"

#include <algorithm>

#include "common/cuda_support.hpp"
#include "common/device.hpp"
#include "common/device_timer.hpp"
#include "common/error.hpp"
#if defined(USP_HAVE_CUDA)
#include "kernels/fused/fused_cuda.hpp"
#endif

namespace usp::ch13 {

bool gpu_chains_available() {
#if defined(USP_HAVE_CUDA)
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

void GpuChain::upload(const Chain& chain) {
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].copy_from(chain.inputs[i]);
  for (std::size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_from(chain.outputs[i]);
}

#if defined(USP_HAVE_CUDA)

GpuChain gpu_chain(const Chain& chain, const ChainSizes& z) {
  USP_CHECK(gpu_chains_available(), "chapter 13's GPU chains need a CUDA device");
  const Device gpu = Device::cuda(0);
  GpuChain g;
  for (const Tensor& t : chain.inputs) g.inputs.push_back(t.to(gpu, MemCategory::Temporary));
  for (const Tensor& t : chain.outputs) g.outputs.push_back(t.to(gpu, MemCategory::Temporary));
  auto in = [&g](int i) { return g.inputs[static_cast<std::size_t>(i)].data<float>(); };
  auto out = [&g](int i) { return g.outputs[static_cast<std::size_t>(i)].data<float>(); };
  const std::string& id = chain.id;
  if (id == "norm_fwd") {
    g.variants.push_back({"fused", 1, [=] {
      fused_cuda::residual_rmsnorm_forward(in(0), in(1), in(2), 1e-5f, z.rows, z.hidden, out(0), out(1), out(2));
    }});
    g.scratch = {Tensor::empty({z.rows, z.hidden}, DType::f32, MemCategory::Temporary, gpu),
                 Tensor::empty({z.rows}, DType::f32, MemCategory::Temporary, gpu),
                 Tensor::empty({z.rows, z.hidden}, DType::f32, MemCategory::Temporary, gpu)};
    float *sq = g.scratch[0].data<float>(), *ms = g.scratch[1].data<float>(), *t = g.scratch[2].data<float>();
    g.variants.push_back({"unfused", 6, [=] {
      fused_cuda::residual_rmsnorm_forward_unfused(in(0), in(1), in(2), 1e-5f, z.rows, z.hidden, out(0), out(1),
                                                   out(2), sq, ms, t);
    }});
  } else if (id == "norm_bwd") {
    g.variants.push_back({"fused", 1, [=] {
      fused_cuda::residual_rmsnorm_backward(in(0), in(1), in(2), in(3), z.rows, z.hidden, out(0), out(1));
    }});
  } else if (id == "swiglu_fwd") {
    g.variants.push_back({"fused", 1, [=] { fused_cuda::swiglu_forward(in(0), in(1), out(0), z.rows * z.ffn); }});
  } else if (id == "swiglu_bwd") {
    g.variants.push_back({"fused", 1, [=] {
      fused_cuda::swiglu_backward(in(0), in(1), in(2), out(0), out(1), z.rows * z.ffn);
    }});
  } else if (id == "softmax_ce") {
    const std::int32_t* targets = g.inputs[1].data<std::int32_t>();
    g.variants.push_back({"fused", 1, [=] {
      fused_cuda::softmax_cross_entropy(in(0), targets, 1.0f / static_cast<float>(z.rows), out(0), out(1), z.rows,
                                        z.vocab);
    }});
  } else if (id == "adamw") {
    const fused::AdamWStep c = adamw_chain_step();
    const fused_cuda::AdamWArgs s{c.decay, c.beta1, c.beta2, c.step_size, c.bc2_sqrt, c.eps};
    g.variants.push_back({"fused", 1, [=] { fused_cuda::adamw(out(0), in(0), out(1), out(2), s, z.params); }});
  } else {
    throw Error("gpu_chain: no CUDA kernels for chain '" + id + "'");
  }
  return g;
}

double gpu_launch_overhead_us(int launches) { return fused_cuda::empty_kernel_us(launches); }
std::string gpu_device_name() { return cuda::device_name(); }

double gpu_copy_bandwidth_gb_per_s(std::int64_t bytes, int reps) {
  const std::int64_t n = std::max<std::int64_t>(1, bytes / 4);
  Tensor src = Tensor::zeros({n}, DType::f32, MemCategory::Temporary, Device::cuda(0));
  Tensor dst = Tensor::zeros({n}, DType::f32, MemCategory::Temporary, Device::cuda(0));
  dst.copy_from(src);  // warm-up
  const double ms = median_ms([&] { dst.copy_from(src); }, reps, Device::cuda(0));
  return 2.0 * static_cast<double>(n) * 4.0 / (ms * 1e6);
}

std::vector<VariantTiming> bench_chains_gpu(const std::vector<std::string>& ids, const ChainSizes& sizes, int reps) {
  std::vector<VariantTiming> rows;
  for (const std::string& id : ids) {
    const Chain chain = make_chain(id, sizes);
    chain.reset();
    GpuChain g = gpu_chain(chain, sizes);
    for (const GpuVariant& v : g.variants) {
      g.upload(chain);
      v.run();  // warm-up: the module is loaded, the caches see the tensors once
      const double ms = median_ms(v.run, reps, Device::cuda(0), [&] { g.upload(chain); });
      rows.push_back(timing_row(chain, chain.variant(v.name), v.launches, ms));
    }
  }
  return rows;
}

#else

GpuChain gpu_chain(const Chain&, const ChainSizes&) { throw Error("chapter 13's GPU chains need a CUDA build"); }
double gpu_launch_overhead_us(int) { throw Error("chapter 13's GPU chains need a CUDA build"); }
std::string gpu_device_name() { throw Error("chapter 13's GPU chains need a CUDA build"); }
double gpu_copy_bandwidth_gb_per_s(std::int64_t, int) { throw Error("chapter 13's GPU chains need a CUDA build"); }
std::vector<VariantTiming> bench_chains_gpu(const std::vector<std::string>&, const ChainSizes&, int) {
  throw Error("chapter 13's GPU chains need a CUDA build");
}

#endif

}  // namespace usp::ch13
