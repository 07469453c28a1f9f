// Chapter 11, exercise 11.2: rung 03 of the matmul ladder, shared-memory tiling.
//
// Rung 02 reads every element of A and B from global memory once per use: K·(M·N) loads each
// for 2·M·N·K FLOPs. Rung 03 lets a block of 32×32 threads, which computes a 32×32 tile of C,
// walk K in steps of 32; at each step the block copies a 32×32 tile of A and one of B into
// shared memory (on-chip, ~100× lower latency than DRAM) and every thread then reads the 32
// values it needs from there. Each element loaded from global memory is used 32 times:
//
//   for k0 = 0, 32, 64, ... < K:
//     phase 1  smem_load_tiles: thread (ty, tx) copies  A[row0+ty][k0+tx] -> As[ty][tx]
//                                                       B[k0+ty][col0+tx] -> Bs[ty][tx]
//              (0 where the index falls outside A or B, so the edge tiles need no other care)
//     __syncthreads()   nobody reads the tiles before everybody has written them
//     phase 2  smem_tile_dot: acc += Σ_{k<32} As[ty][k]·Bs[k][tx]
//     __syncthreads()   nobody overwrites the tiles before everybody has read them
//   C[row0+ty][col0+tx] = alpha·acc + beta·C[...]   (threads outside C store nothing)
//
// with row0 = by·32, col0 = bx·32, thread t = ty·32 + tx (tx fastest: a warp is one row of the
// tile, so its loads of A and B are 32 consecutive floats, coalesced).
//
// The two phase bodies are USP_HD: the kernel (kernels/matmul/03_smem_tiling.cu) runs
// them on the GPU, and smem_emulation.hpp runs them on the CPU, thread after thread, with the two
// __syncthreads() as the boundaries between loops — which is exactly what the barriers promise.
#pragma once
#include "common/hostdevice.hpp"
#include "kernels/matmul/gemm.hpp"

namespace usp::ch11 {

inline constexpr int kSmemTile = 32;  // tile edge: 32×32 tiles, 1024 threads per block

// Exercise 11.2, phase 1. As and Bs are kSmemTile×kSmemTile, row-major (As[ty·32 + tx]).
USP_HD void smem_load_tiles(const matmul::GemmF32& g, int row0, int col0, int k0, int ty, int tx, float* As,
                            float* Bs);
// Exercise 11.2, phase 2: acc plus row ty of As times column tx of Bs, summed in k order.
USP_HD float smem_tile_dot(const float* As, const float* Bs, int ty, int tx, float acc);

}  // namespace usp::ch11

// Rung 03's launcher, matmul::matmul_03_smem_tiling, is declared with the other rungs in
// kernels/matmul/rungs.hpp.

// The definitions of the two phases, header-only like coalesced_cell (coalesced.hpp):
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
