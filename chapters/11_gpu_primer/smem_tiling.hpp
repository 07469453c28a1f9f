// Chapter 11, exercise 11.2: rungs 03 and 04 of the matmul ladder, shared-memory tiling, and
// shared-memory tiling with 1-D thread coarsening — one body, two tile shapes.
//
// Rung 02 reads every element of A and B from global memory once per use: K·(M·N) loads each
// for 2·M·N·K FLOPs. Rung 03 lets a block, which computes a BM×BN tile of C, walk K in steps of
// BK; at each step the block copies a BM×BK tile of A and a BK×BN tile of B into shared memory
// (on-chip, ~100× lower latency than DRAM) and every thread then reads the values it needs from
// there: each element loaded from global memory serves BN (of A) or BM (of B) multiply-adds.
// Rung 04 adds thread coarsening: a thread computes TM elements of one column of C instead of
// one, keeping each value of B it reads from shared memory in a register for TM multiply-adds.
//
//   rung 03  SmemTile<32, 32, 32, 1>  1024 threads, one element of C each
//   rung 04  SmemTile<64, 64,  8, 8>   512 threads, a column of 8 elements of C each
//
// The exercise is the whole of one thread's work (smem_tiling_thread below). It is a template
// over the tile shape and over a `lane` whose one operation here is lane.sync_block(), the
// block's barrier: __syncthreads() on the GPU (mma::DeviceLane, kernels/tensor_core/m16n8k16.hpp,
// in kernels/matmul/03_smem_tiling.cu and 04_blocktiling_1d.cu), a std::barrier of the block's
// host threads on the CPU (mma::HostLane, kernels/tensor_core/host_warp.hpp, in the tests and
// smem_emulation.hpp): the very same body runs in both.
#pragma once
#include "common/hostdevice.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/gemm.hpp"
#include "kernels/tensor_core/m16n8k16.hpp"

namespace usp::ch11 {

// A block's tile of C is BM×BN; K is walked BK at a time; each thread computes TM rows of one
// column. The block has BM·BN/TM threads; its shared memory is As [BM·BK] and Bs [BK·BN] floats.
template <int BM_, int BN_, int BK_, int TM_>
struct SmemTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_;
  static constexpr int kThreads = BM * BN / TM;
  static_assert(BM % TM == 0 && kThreads % 32 == 0, "whole warps of whole columns");
};
using Rung03Tile = SmemTile<32, 32, 32, 1>;
using Rung04Tile = SmemTile<64, 64, 8, 8>;

// Exercise 11.2 — the work of thread t (0 <= t < Tile::kThreads) of block (bx, by) for the
// problem g (kernels/matmul/gemm.hpp: A M×K, B K×N, C M×N row-major, any M, N, K >= 1).
//   The block owns C's rows by·BM .. by·BM + BM - 1 and columns bx·BN .. bx·BN + BN - 1; thread t
//   owns rows by·BM + (t / BN)·TM + i for i < TM of column bx·BN + t % BN (consecutive threads,
//   consecutive columns: a warp's accesses to B and C coalesce, as in rung 02).
//   As, Bs: the block's shared memory, shared by its kThreads threads (contents undefined on entry).
// Writes C[row][col] = alpha·Σ_k A[row][k]·B[k][col] + beta·C[row][col] (matmul::store_c, which
// does not read C when beta == 0) for each element it owns that lies inside C; nothing else of C.
// Invariants:
//   * memory: A and B are read from global memory into the shared tiles only, never outside A
//     (M×K) or B (K×N) — the tiles at the right, bottom and K edges overhang the matrices
//     whenever M, N or K is not a multiple of BM, BN or BK — and for each step k0 = 0, BK, 2·BK, ...
//     the shared tiles hold, once every thread has loaded its share,
//         As[r·BK + c] = A[by·BM + r][k0 + c]   and   Bs[r·BN + c] = B[k0 + r][bx·BN + c],
//     with 0 wherever that element lies outside A or B;
//   * barriers: every thread of the block reaches lane.sync_block() equally often — including a
//     thread whose elements all lie outside C (it still loads its share of the tiles); no thread
//     reads a tile before all have written it, nor overwrites it before all have read it;
//   * arithmetic: each element's sum runs over k in increasing order, in fp32.
template <class Tile, class Lane>
USP_LANE_BODY void smem_tiling_thread(Lane& lane, const matmul::GemmF32& g, int bx, int by, int t, float* As,
                                      float* Bs);

}  // namespace usp::ch11

// Rung 03's and rung 04's launchers, matmul::matmul_03_smem_tiling and matmul_04_blocktiling_1d,
// are declared with the other rungs in kernels/matmul/rungs.hpp.

// The definition, header-only like coalesced_cell (coalesced.hpp):
// solutions/11_gpu_primer/smem_tile_body.hpp, or in chapter 11's exercise build the student's
// exercises/11_gpu_primer/smem_tile_body.hpp.
#include "chapters/11_gpu_primer/exercise_variant.hpp"
#if USP_CH11_EXERCISES == 2
#include "mutant/solutions/11_gpu_primer/smem_tile_body.hpp"
#elif USP_CH11_EXERCISES == 1
#include "exercises/11_gpu_primer/smem_tile_body.hpp"
#else
#include "solutions/11_gpu_primer/smem_tile_body.hpp"
#endif
