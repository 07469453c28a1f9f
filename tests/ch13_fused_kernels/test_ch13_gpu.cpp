// Chapter 13 on a GPU ([gpu]): each CUDA kernel of kernels/fused against the CPU chain's fused
// variant on the same inputs (odd sizes: 37 rows, widths 45 and 1001, a vocabulary of 3001), the
// unfused CUDA forward against the same, and the launch overhead measured. Skips with a warning
// without a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/chains.hpp"
#include "common/device.hpp"
#if defined(USP_HAVE_CUDA)
#include "kernels/fused/fused_cuda.hpp"
#endif

using namespace usp;
using namespace usp::ch13;

TEST_CASE("chapter 13's CUDA kernels equal the CPU chains", "[ch13][gpu]") {
  if (cuda_device_count() == 0) {
    WARN("no CUDA device: skipped");
    return;
  }
#if defined(USP_HAVE_CUDA)
  const Device gpu = Device::cuda(0);
  const ChainSizes z{37, 1001, 45, 3001, 100003};
  auto up = [&](const Tensor& t) { return t.to(gpu, MemCategory::Temporary); };
  auto fp = [](const Tensor& t) { return t.data<float>(); };
  // 1e-5 relative: fp32 on both sides; the device's expf and its block-order sums differ from the
  // CPU's lane-order sums and exp_approx by a few ulps.
  auto check = [](const Tensor& dev, const Tensor& cpu, const std::string& what) {
    const std::vector<float> got = dev.to(Device::cpu()).to_floats(), want = cpu.to_floats();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double bound = 1e-5 * (1.0 + std::fabs(want[i]));
      if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= bound))
        FAIL(what << ": element " << i << " is " << got[i] << ", expected " << want[i]);
    }
  };
  for (const std::string& id : chain_ids()) {
    INFO(id);
    const Chain chain = make_chain(id, z);
    chain.reset();
    std::vector<Tensor> in;
    for (const Tensor& t : chain.inputs) in.push_back(up(t));
    std::vector<Tensor> out;
    for (const Tensor& t : chain.outputs) out.push_back(up(t));  // the reset state (accumulating outputs)
    chain.variant("fused").run();
    const std::vector<Tensor>& ref = chain.outputs;
    if (id == "norm_fwd") {
      fused_cuda::residual_rmsnorm_forward(fp(in[0]), fp(in[1]), fp(in[2]), 1e-5f, z.rows, z.hidden, fp(out[0]),
                                           fp(out[1]), fp(out[2]));
      for (int o = 0; o < 3; ++o) check(out[static_cast<std::size_t>(o)], ref[static_cast<std::size_t>(o)], "fused " + id);
      Tensor sq = Tensor::empty({z.rows, z.hidden}, DType::f32, MemCategory::Temporary, gpu);
      Tensor ms = Tensor::empty({z.rows}, DType::f32, MemCategory::Temporary, gpu);
      Tensor t = Tensor::empty({z.rows, z.hidden}, DType::f32, MemCategory::Temporary, gpu);
      fused_cuda::residual_rmsnorm_forward_unfused(fp(in[0]), fp(in[1]), fp(in[2]), 1e-5f, z.rows, z.hidden,
                                                   fp(out[0]), fp(out[1]), fp(out[2]), fp(sq), fp(ms), fp(t));
      for (int o = 0; o < 3; ++o) check(out[static_cast<std::size_t>(o)], ref[static_cast<std::size_t>(o)], "unfused " + id);
    } else if (id == "norm_bwd") {
      fused_cuda::residual_rmsnorm_backward(fp(in[0]), fp(in[1]), fp(in[2]), fp(in[3]), z.rows, z.hidden, fp(out[0]),
                                            fp(out[1]));
      for (int o = 0; o < 2; ++o) check(out[static_cast<std::size_t>(o)], ref[static_cast<std::size_t>(o)], id);
    } else if (id == "swiglu_fwd") {
      fused_cuda::swiglu_forward(fp(in[0]), fp(in[1]), fp(out[0]), z.rows * z.ffn);
      check(out[0], ref[0], id);
    } else if (id == "swiglu_bwd") {
      fused_cuda::swiglu_backward(fp(in[0]), fp(in[1]), fp(in[2]), fp(out[0]), fp(out[1]), z.rows * z.ffn);
      for (int o = 0; o < 2; ++o) check(out[static_cast<std::size_t>(o)], ref[static_cast<std::size_t>(o)], id);
    } else if (id == "softmax_ce") {
      fused_cuda::softmax_cross_entropy(fp(in[0]), in[1].data<std::int32_t>(), 1.0f / static_cast<float>(z.rows),
                                        fp(out[0]), fp(out[1]), z.rows, z.vocab);
      for (int o = 0; o < 2; ++o) check(out[static_cast<std::size_t>(o)], ref[static_cast<std::size_t>(o)], id);
    } else if (id == "adamw") {
      const fused::AdamWStep c = adamw_chain_step();
      const fused_cuda::AdamWArgs s{c.decay, c.beta1, c.beta2, c.step_size, c.bc2_sqrt, c.eps};
      fused_cuda::adamw(fp(out[0]), fp(in[0]), fp(out[1]), fp(out[2]), s, z.params);
      for (int o = 0; o < 3; ++o) check(out[static_cast<std::size_t>(o)], ref[static_cast<std::size_t>(o)], id);
    }
  }
  const double us = fused_cuda::empty_kernel_us(1000);
  WARN("launch overhead of an empty kernel: " << us << " us");
  CHECK(us > 0);
#endif
}
