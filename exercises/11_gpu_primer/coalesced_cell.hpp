// Exercise 11.1: one thread of rung 02, the coalesced matmul — which element of C it computes
// (coalesced_cell), and computing it (coalesced_thread) — and what one warp's accesses cost in
// 32-byte sectors (warp_sectors).
//
// The contract (coverage, coalescing, the bounds, the strides, the sectors) is in
// chapters/11_gpu_primer/coalesced.hpp; the idea and the questions in the lesson's sections 3
// and 7. The kernel (kernels/matmul/02_coalesced.cu) calls coalesced_thread; the tests run every
// thread of a grid on the CPU.
// Check your work with: ./usp test 11.1 --exercises   (CPU tests; no GPU needed)
#pragma once
#include "chapters/11_gpu_primer/coalesced.hpp"
#include "common/error.hpp"

namespace usp::ch11 {

USP_HD Cell coalesced_cell(int bx, int by, int t) {
#if defined(__CUDA_ARCH__)
  return {-1, -1};  // never runs: the launcher checks this function on the CPU first
#else
  (void)bx, (void)by, (void)t;
  throw NotImplemented(
      "exercise 11.1: coalesced_cell (hint: which of a warp's two indices should pick the column?)");
#endif
}

USP_HD void coalesced_thread(const matmul::GemmF32& g, int bx, int by, int t) {
#if !defined(__CUDA_ARCH__)  // on the GPU the stub does nothing: the launcher checks on the CPU first
  (void)g, (void)bx, (void)by, (void)t;
  throw NotImplemented(
      "exercise 11.1: coalesced_thread (hint: on the edge tiles, which threads have nothing to do, and "
      "what would they touch if they went on?)");
#endif
}

inline WarpSectors warp_sectors(const WarpCells& cells, int M, int N, int K, int k) {
  (void)cells, (void)M, (void)N, (void)K, (void)k;
  throw NotImplemented(
      "exercise 11.1: warp_sectors (hint: where does B's row k start, in bytes, and where do its sectors start?)");
}

}  // namespace usp::ch11
