// Chapter 11, exercise 11.1: rung 02 of the matmul ladder, "coalesced": rung 01 with a better
// mapping from threads to elements of C.
//
// Both rungs launch 1024 threads per block, one per element of a 32×32 tile of C; block
// (bx, by) owns the tile whose top-left element is C[by·32][bx·32]. Thread t's element comes
// from coalesced_cell(bx, by, t). What matters is what a WARP (threads 32w .. 32w+31, which
// execute each load together) asks memory for at step k of the dot product:
//   rung 01: the 32 lanes have 32 consecutive ROWS  -> A[row][k] is 32 addresses K floats apart
//   rung 02: the 32 lanes have 32 consecutive COLUMNS of one row
//            -> B[k][col] and C[row][col] are 32 consecutive floats: one 128-byte transaction
//            -> A[row][k] is one address for the whole warp: a broadcast
// That is coalescing: the hardware merges a warp's accesses to consecutive addresses into as
// few memory transactions as possible.
//
// The function is USP_HD: the kernel (kernels/matmul/02_coalesced.cu) calls it on the
// GPU, and the tests call it on the CPU to check the two properties below without a GPU.
#pragma once
#include "common/hostdevice.hpp"

namespace usp::ch11 {

inline constexpr int kCoalescedTile = 32;  // the block's tile of C is 32×32: 1024 threads

// An element of C: row i, column j.
struct Cell {
  int row = 0, col = 0;
};

// Exercise 11.1: the element of C that thread t (0 <= t < 1024) of block (bx, by) computes.
//   (a) coverage: the 1024 threads of block (bx, by) get the 1024 elements of its tile, rows
//       by·32 .. by·32+31 and columns bx·32 .. bx·32+31, each exactly once;
//   (b) coalescing: threads t and t+1 of the same warp get the same row and columns j, j+1.
// Cells outside C (on the edge tiles of sizes that are not multiples of 32) are allowed: the
// kernel skips them.
USP_HD Cell coalesced_cell(int bx, int by, int t);

}  // namespace usp::ch11

// Rung 02's launcher, matmul::matmul_02_coalesced, is declared with the other rungs in
// kernels/matmul/rungs.hpp.

// The definition of coalesced_cell, header-only so that the kernel and the CPU tests compile the
// same code: solutions/11_gpu_primer/coalesced_cell.hpp, or in chapter 11's exercise build the
// student's exercises/11_gpu_primer/coalesced_cell.hpp. Each variant of chapter 11's library sets
// USP_CH11_EXERCISES (0, 1, or 2 for the mutant copy of ./usp test --mutants) for itself and for what links it (chapters/11_gpu_primer/CMakeLists.txt).
#include "chapters/11_gpu_primer/exercise_variant.hpp"
#if USP_CH11_EXERCISES == 2
#include "mutant/solutions/11_gpu_primer/coalesced_cell.hpp"
#elif USP_CH11_EXERCISES == 1
#include "exercises/11_gpu_primer/coalesced_cell.hpp"
#else
#include "solutions/11_gpu_primer/coalesced_cell.hpp"
#endif
