// Exercise 11.2: one thread of the shared-memory tiled matmul, for any tile shape (rung 03 and,
// with thread coarsening, rung 04).
//
// The contract (which elements the thread owns, what the shared tiles must hold, the barriers)
// is in chapters/11_gpu_primer/smem_tiling.hpp; the idea and the questions in the lesson's
// section 7. The kernels (kernels/matmul/03_smem_tiling.cu, 04_blocktiling_1d.cu) and the CPU
// emulation (chapters/11_gpu_primer/smem_emulation.hpp, one host thread per CUDA thread) call it.
// Check your work with: ./usp test 11.2 --exercises   (CPU tests; no GPU needed)
#pragma once
#include "chapters/11_gpu_primer/smem_tiling.hpp"
#include "common/error.hpp"

namespace usp::ch11 {

template <class Tile, class Lane>
USP_LANE_BODY void smem_tiling_thread(Lane& lane, const matmul::GemmF32& g, int bx, int by, int t, float* As,
                                      float* Bs) {
#if !defined(__CUDA_ARCH__)  // on the GPU the stub does nothing: the launcher checks on the CPU first
  (void)lane, (void)g, (void)bx, (void)by, (void)t, (void)As, (void)Bs;
  throw NotImplemented(
      "exercise 11.2: smem_tiling_thread (hint: how many elements of each tile must one thread load, and "
      "what must it still do when its own elements of C lie outside the matrix?)");
#endif
}

}  // namespace usp::ch11
