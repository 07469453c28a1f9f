// Chapter 13 on a GPU ([gpu]): each CUDA kernel of kernels/fused against the CPU chain's fused
// variant on the same inputs (odd sizes: 37 rows, widths 45 and 1001, a vocabulary of 3001), the
// unfused CUDA forward against the same, and the launch overhead measured. Skips with a warning
// without a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/chains.hpp"
#include "chapters/13_fused_kernels/gpu_chains.hpp"
#if defined(USP_HAVE_CUDA)
#include "kernels/fused/fused_cuda.hpp"
#endif

using namespace usp;
using namespace usp::ch13;

TEST_CASE("chapter 13's CUDA kernels equal the CPU chains", "[ch13][gpu]") {
  if (!gpu_chains_available()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const ChainSizes z{37, 1001, 45, 3001, 100003};
  for (const std::string& id : chain_ids()) {
    INFO(id);
    const Chain chain = make_chain(id, z);
    chain.reset();
    chain.variant("fused").run();
    std::vector<std::vector<float>> want;
    for (const Tensor& t : chain.outputs) want.push_back(t.to_floats());
    GpuChain g = gpu_chain(chain, z);
    for (const GpuVariant& v : g.variants) {
      chain.reset();
      g.upload(chain);  // the starting state (accumulating and in-place outputs included)
      v.run();
      for (std::size_t o = 0; o < want.size(); ++o) {
        const std::vector<float> got = g.outputs[o].to_floats();
        REQUIRE(got.size() == want[o].size());
        // 1e-5 relative: fp32 on both sides; the device's expf and its block-order sums (and the
        // norm backward's atomic adds into dw, in any order) differ from the CPU's lane-order sums
        // and exp_approx by a few ulps.
        for (std::size_t i = 0; i < got.size(); ++i) {
          const double bound = 1e-5 * (1.0 + std::fabs(want[o][i]));
          if (!(std::fabs(static_cast<double>(got[i]) - want[o][i]) <= bound))
            FAIL(v.name << " " << id << ", output " << o << ": element " << i << " is " << got[i] << ", expected "
                        << want[o][i]);
        }
      }
    }
  }
#if defined(USP_HAVE_CUDA)
  const double us = fused_cuda::empty_kernel_us(1000);
  WARN("launch overhead of an empty kernel: " << us << " us");
  CHECK(us > 0);
#endif
}
