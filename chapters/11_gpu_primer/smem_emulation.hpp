// Rungs 03 and 04 on the CPU: every block of the grid, one after the other, each run as the GPU
// runs it — one host thread per CUDA thread, all executing the exercise's body
// (smem_tiling_thread, smem_tiling.hpp), with lane.sync_block() a std::barrier of the block's
// threads. The same body as the kernels', so a test of this is a test of theirs, on sizes that
// are not multiples of the tiles.
//
// What the CPU can see that the GPU would hide or hang on:
//   * a thread that returns without reaching every barrier (an early exit for a thread outside
//     C) would leave the others waiting forever on the GPU; here it leaves the barrier
//     (arrive_and_drop) and the block ends with usp::Error naming the thread and its count;
//   * an exception in one thread (a stub's usp::NotImplemented) ends that thread, the others go
//     on, and the first one is rethrown once the block has joined: no hang, no std::terminate.
// Shapes: A M×K, B K×N, C M×N row-major host pointers (kernels/matmul/gemm.hpp).
#pragma once
#include <barrier>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chapters/11_gpu_primer/smem_tiling.hpp"
#include "common/error.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/gemm.hpp"

namespace usp::ch11 {

// The lane of one host thread of an emulated block: its barrier is the block's, and it counts.
struct BlockLane {
  std::barrier<>* block = nullptr;
  int syncs = 0;
  void sync_block() {
    ++syncs;
    block->arrive_and_wait();
  }
};

// Runs block (bx, by) of rung `Tile` on g with As [BM·BK] and Bs [BK·BN] as its shared memory
// (the caller's, so that a test can look at what the tiles hold afterwards).
template <class Tile>
void emulate_smem_block(const matmul::GemmF32& g, int bx, int by, float* As, float* Bs) {
  constexpr int kThreads = Tile::kThreads;
  std::barrier<> block(kThreads);
  std::vector<int> syncs(kThreads, 0);
  std::exception_ptr first_error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  pool.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      BlockLane lane{&block};
      try {
        smem_tiling_thread<Tile>(lane, g, bx, by, t, As, Bs);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
      }
      syncs[static_cast<std::size_t>(t)] = lane.syncs;
      block.arrive_and_drop();  // a thread that is done no longer holds the others at the barrier
    });
  for (std::thread& th : pool) th.join();
  if (first_error) std::rethrow_exception(first_error);
  for (int t = 1; t < kThreads; ++t)
    if (syncs[static_cast<std::size_t>(t)] != syncs[0])
      throw Error("smem_tiling_thread: thread " + std::to_string(t) + " of block (" + std::to_string(bx) + ", " +
                  std::to_string(by) + ") reached lane.sync_block() " + std::to_string(syncs[static_cast<std::size_t>(t)]) +
                  " times and thread 0 " + std::to_string(syncs[0]) +
                  " times: on a GPU the block would hang (every thread must reach every barrier)");
}

// The whole grid of rung `Tile`: ceil(N / BN) × ceil(M / BM) blocks.
template <class Tile>
void emulate_smem_tiling(const matmul::GemmF32& g) {
  std::vector<float> As(Tile::BM * Tile::BK), Bs(Tile::BK * Tile::BN);  // one block's shared memory
  for (int by = 0; by < matmul::ceil_div(g.M, Tile::BM); ++by)
    for (int bx = 0; bx < matmul::ceil_div(g.N, Tile::BN); ++bx) emulate_smem_block<Tile>(g, bx, by, As.data(), Bs.data());
}

}  // namespace usp::ch11
