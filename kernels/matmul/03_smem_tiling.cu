// Rung 03, shared-memory tiling. Changes from rung 02: a block stages 32×32 tiles of A and B in
// shared memory and its threads compute from there.
// Why faster: every element loaded from global memory serves 32 FMAs instead of 1, so global
// traffic drops 32×; the repeated reads hit on-chip shared memory instead.
//
// The whole thread is exercise 11.2, smem_tiling_thread<Rung03Tile>, drawn and declared in
// chapters/11_gpu_primer/smem_tiling.hpp; its body is header-only in
// solutions/11_gpu_primer/smem_tile_body.hpp (or, in chapter 11's exercise build,
// exercises/11_gpu_primer/smem_tile_body.hpp). The kernel around it and its launch are rung 04's
// too (smem_tiling_launch.cuh). Compiled into chapter 11's library, once per variant, like rung 02.
//
// Block: 1024 threads for a 32×32 tile of C, thread t = (ty, tx) = (t/32, t%32);
// grid: ceil(N/32) × ceil(M/32).
//   shared As: 32×32 floats (A[row0 .. +32][k0 .. +32]), shared Bs: 32×32 floats (B[k0 .. +32][col0 .. +32])
#include "kernels/matmul/rungs.hpp"
#include "kernels/matmul/smem_tiling_launch.cuh"

namespace usp::matmul {

void matmul_03_smem_tiling(const GemmF32& g) { launch_smem_tiling<ch11::Rung03Tile>(g, "matmul_03_smem_tiling"); }

}  // namespace usp::matmul
