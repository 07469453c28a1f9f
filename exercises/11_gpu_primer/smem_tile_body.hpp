// Exercise 11.2: the two phases of the shared-memory tiled matmul.
//
// Read chapters/11_gpu_primer/smem_tiling.hpp (the algorithm, the two phases and the two
// barriers between them) and the lesson's section on rung 03 first. Then replace the two
// bodies below:
//   smem_load_tiles  As[ty·32 + tx] = A[row0 + ty][k0 + tx] and Bs[ty·32 + tx] = B[k0 + ty][col0 + tx],
//                    writing 0 where the row or column falls outside A (M×K) or B (K×N)
//   smem_tile_dot    return acc + Σ_{k<32} As[ty·32 + k]·Bs[k·32 + tx]
// A, B are row-major: A[i][k] is g.A[i·g.K + k], B[k][j] is g.B[k·g.N + j].
// The kernel (kernels/matmul/03_smem_tiling.cu) and the CPU emulation
// (chapters/11_gpu_primer/smem_emulation.hpp) call these; the tests run the emulation on sizes
// that are not multiples of 32, so the zeros at the edges matter.
// Check your work with: ./usp test 11 --exercises   (CPU tests; no GPU needed)
#pragma once
#include "chapters/11_gpu_primer/smem_tiling.hpp"
#include "common/error.hpp"

namespace usp::ch11 {

USP_HD void smem_load_tiles(const matmul::GemmF32& g, int row0, int col0, int k0, int ty, int tx, float* As,
                            float* Bs) {
#if !defined(__CUDA_ARCH__)  // on the GPU the stub does nothing: the launcher checks on the CPU first
  (void)g, (void)row0, (void)col0, (void)k0, (void)ty, (void)tx, (void)As, (void)Bs;
  throw NotImplemented(
      "exercise 11.2: smem_load_tiles — copy A[row0+ty][k0+tx] and B[k0+ty][col0+tx] into As[ty][tx] and "
      "Bs[ty][tx], 0 outside the matrices (hint: guard each with row < rows && col < cols)");
#endif
}

USP_HD float smem_tile_dot(const float* As, const float* Bs, int ty, int tx, float acc) {
#if defined(__CUDA_ARCH__)
  return acc;  // never runs: the launcher checks on the CPU first
#else
  (void)As, (void)Bs, (void)ty, (void)tx, (void)acc;
  throw NotImplemented(
      "exercise 11.2: smem_tile_dot — return acc + sum over k < 32 of As[ty][k]·Bs[k][tx] "
      "(hint: As and Bs are 32×32 row-major: As[ty·32 + k], Bs[k·32 + tx])");
#endif
}

}  // namespace usp::ch11
