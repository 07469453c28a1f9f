// Exercise 11.1: the coalesced mapping from threads to elements of C.
//
// Read chapters/11_gpu_primer/coalesced.hpp (the contract: coverage and coalescing) and the
// lesson's section on rungs 01 and 02 first. Then replace the body below with one line that
// returns the element {row, col} thread t of block (bx, by) computes. Block (bx, by) owns the
// 32×32 tile of C starting at row by·32, column bx·32; a warp is 32 consecutive t.
// Hint: t / 32 and t % 32 split t into a warp index and a lane; which one should pick the column?
// The kernel that calls this (kernels/matmul/02_coalesced.cu) is given complete.
// Check your work with: ./usp test 11 --exercises   (CPU tests; no GPU needed)
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
      "exercise 11.1: coalesced_cell — give the 32 threads of a warp 32 consecutive columns of one row "
      "(hint: t / 32 and t % 32 split t into a warp and a lane)");
#endif
}

}  // namespace usp::ch11
