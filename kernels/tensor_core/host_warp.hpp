// A thread block run on the CPU with one host thread per CUDA thread, so that kernel bodies that
// use warp-wide instructions (mma.sync, shuffles) run unchanged: the body is a template over a
// "lane" object whose three operations are the only places the hardware acts for the warp.
//   lane.sync_block()          __syncthreads(): a barrier of the block's threads
//   lane.shfl_xor(x, mask)     __shfl_xor_sync(~0u, x, mask): x of lane (this lane ^ mask)
//   lane.mma(d, a, b)          mma.sync m16n8k16 bf16 (m16n8k16.hpp): D += A·B for the warp
// On the host each warp-wide operation is: every lane posts its operands in the warp's exchange,
// the warp waits at a barrier, each lane computes its own result from the posted operands (for mma
// through the fragment table's inverse: where does A(row, k) live?), and the warp waits again so no
// lane overwrites the exchange before all have read it. Products of two bf16 are exact in fp32 and
// the sums run in k order; the hardware may add in another order (a few fp32 ulps).
// DeviceLane is the same interface on the GPU. Slow (a barrier per instruction) and only for tests.
#pragma once
#include <array>
#include <barrier>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "common/float_formats.hpp"
#include "kernels/tensor_core/m16n8k16.hpp"

namespace usp::mma {

struct WarpExchange {
  std::barrier<> barrier{32};
  std::array<std::array<std::uint32_t, 4>, 32> a{};
  std::array<std::array<std::uint32_t, 2>, 32> b{};
  std::array<float, 32> x{};
};

class HostLane {
 public:
  HostLane(int thread, std::barrier<>& block, WarpExchange& warp) : lane_(thread % 32), block_(block), warp_(warp) {}

  void sync_block() { block_.arrive_and_wait(); }

  float shfl_xor(float x, int mask) {
    warp_.x[static_cast<std::size_t>(lane_)] = x;
    warp_.barrier.arrive_and_wait();
    const float got = warp_.x[static_cast<std::size_t>(lane_ ^ mask)];
    warp_.barrier.arrive_and_wait();
    return got;
  }

  void mma(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    const auto me = static_cast<std::size_t>(lane_);
    for (int r = 0; r < 4; ++r) warp_.a[me][static_cast<std::size_t>(r)] = a[r];
    for (int r = 0; r < 2; ++r) warp_.b[me][static_cast<std::size_t>(r)] = b[r];
    warp_.barrier.arrive_and_wait();
    for (int v = 0; v < 4; ++v) {
      const int row = c_row(lane_, v), n = c_col(lane_, v);
      float sum = d[v];
      for (int k = 0; k < kK; ++k) {
        const Slot sa = a_slot(row, k), sb = b_slot(k, n);
        const float x = bf16_to_float(half_of(warp_.a[static_cast<std::size_t>(sa.lane)][static_cast<std::size_t>(sa.reg)], sa.h));
        const float y = bf16_to_float(half_of(warp_.b[static_cast<std::size_t>(sb.lane)][static_cast<std::size_t>(sb.reg)], sb.h));
        sum += x * y;
      }
      d[v] = sum;
    }
    warp_.barrier.arrive_and_wait();
  }

 private:
  int lane_;
  std::barrier<>& block_;
  WarpExchange& warp_;
};

// Runs body(thread, lane) for thread = 0 .. threads-1 of one block, each on its own host thread;
// threads must be a multiple of 32.
inline void run_host_block(int threads, const std::function<void(int, HostLane&)>& body) {
  std::barrier<> block(threads);
  std::vector<std::unique_ptr<WarpExchange>> warps;
  for (int w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<WarpExchange>());
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      HostLane lane(t, block, *warps[static_cast<std::size_t>(t / 32)]);
      body(t, lane);
    });
  for (std::thread& th : pool) th.join();
}

}  // namespace usp::mma
