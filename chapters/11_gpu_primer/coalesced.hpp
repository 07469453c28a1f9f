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
// The exercise is the whole of one thread of rung 02: which element it computes
// (coalesced_cell) and computing it (coalesced_thread), and what a warp of such threads costs
// the memory system (warp_sectors). The first two are USP_HD: the kernel
// (kernels/matmul/02_coalesced.cu) calls coalesced_thread on the GPU, and the tests call both on
// the CPU — every thread of every block, one after the other — without a GPU. warp_sectors is a
// host-side model of the hardware, counted on the CPU for any mapping (rung 01's too).
#pragma once
#include <array>

#include "common/hostdevice.hpp"
#include "kernels/matmul/gemm.hpp"

namespace usp::ch11 {

inline constexpr int kCoalescedTile = 32;  // the block's tile of C is 32×32: 1024 threads

// An element of C: row i, column j.
struct Cell {
  int row = 0, col = 0;
};

// Exercise 11.1, the mapping: the element of C that thread t (0 <= t < 1024) of block (bx, by)
// computes (bx, by >= 0: blockIdx.x walks the columns of C, blockIdx.y its rows).
//   (a) coverage: the 1024 threads of block (bx, by) get the 1024 elements of its tile, rows
//       by·32 .. by·32+31 and columns bx·32 .. bx·32+31, each exactly once;
//   (b) coalescing: threads t and t+1 of the same warp get the same row and columns j, j+1.
// Cells outside C (on the edge tiles of sizes that are not multiples of 32) are allowed: the
// thread computes nothing for them (below).
USP_HD Cell coalesced_cell(int bx, int by, int t);

// Exercise 11.1, the thread: everything thread t of block (bx, by) does in rung 02, for the
// problem g of kernels/matmul/gemm.hpp (any M, N, K >= 1; A M×K, B K×N, C M×N row-major, so
// element (i, k) of A is g.A[i·K + k], (k, j) of B is g.B[k·N + j], (i, j) of C is g.C[i·N + j]).
//   * its element is coalesced_cell(bx, by, t), (row, col);
//   * when that element lies inside C (row < M and col < N) it writes
//       C[row][col] = alpha·Σ_{k<K} A[row][k]·B[k][col] + beta·C[row][col]
//     with the sum over k in increasing order in fp32 and the last step matmul::store_c
//     (kernels/matmul/epilogue.hpp: C is not read when beta == 0);
//   * when it lies outside C — on the edge tiles, in either direction — it reads and writes
//     nothing: no element of A, B or C outside the matrices is ever touched, and no other
//     element of C (a column past N is not the next row's first column).
USP_HD void coalesced_thread(const matmul::GemmF32& g, int bx, int by, int t);

// ---- what a warp's accesses cost --------------------------------------------------------------
// The memory system serves a warp's load or store in 32-byte SECTORS: the aligned 32-byte blocks
// of the address space (8 floats each) that hold at least one of the addresses its lanes use.
// Two lanes in the same sector cost one sector; one lane costs a whole sector however few of its
// bytes it uses.

inline constexpr int kWarpSize = 32;     // threads 32w .. 32w+31 of a block: one warp
inline constexpr int kSectorBytes = 32;  // the unit in which memory serves a warp

// The elements of C of one warp's 32 lanes: cells[l] is lane l's (any mapping: rung 02's
// coalesced_cell, rung 01's row = by·32 + t%32, col = bx·32 + t/32, or any other).
using WarpCells = std::array<Cell, kWarpSize>;

// How many sectors each of the three accesses of one warp touches.
struct WarpSectors {
  int a = 0;  // the load of A[row][k] at the step k
  int b = 0;  // the load of B[k][col] at the step k
  int c = 0;  // the store of C[row][col] after the last step (the same whatever k is)
};

// Exercise 11.1, the cost: the sectors the warp whose lanes compute `cells` touches at step k of
// the dot product of rung 01 or 02's thread (above), in a problem M×N×K.
//   inputs:  cells, any 32 cells (duplicates, cells outside C allowed); M, N, K >= 1; 0 <= k < K.
//   where the data lives: A, B and C are three separate allocations, each starting 256-byte
//     aligned (what cudaMalloc gives), row-major as in kernels/matmul/gemm.hpp: element (i, k)
//     of A is the float at byte 4·(i·K + k) from A's start, (k, j) of B at byte 4·(k·N + j) from
//     B's, (i, j) of C at byte 4·(i·N + j) from C's. So a row of B starts at byte 4·k·N, which
//     is not on a sector boundary when N is not a multiple of 8 (and the same for A and K, C
//     and N): the sectors are those of the address space, not of the rows.
//   output:  for each of A, B and C, the number of distinct sectors that hold the element of at
//     least one ACTIVE lane: a lane is active when its cell lies inside C (0 <= row < M and
//     0 <= col < N); an inactive lane touches no memory and adds nothing (a warp with no active
//     lane costs 0, 0, 0). No sector is shared between two matrices.
//   invariants: 0 <= a, b, c <= the number of active lanes; each count depends only on the
//     active lanes' cells, not on their order among the lanes.
//   errors:  throws usp::Error, naming warp_sectors and the bad values, for M, N or K < 1
//     ("warp_sectors: the problem 0×5×5 is empty: M, N and K must be >= 1") and for k outside
//     0..K-1 ("warp_sectors: step k = 9 is outside 0..8 (K = 9)").
inline WarpSectors warp_sectors(const WarpCells& cells, int M, int N, int K, int k);

}  // namespace usp::ch11

// Rung 02's launcher, matmul::matmul_02_coalesced, is declared with the other rungs in
// kernels/matmul/rungs.hpp.

// The definitions of coalesced_cell, coalesced_thread and warp_sectors, header-only so that the kernel and the
// CPU tests compile the same code: solutions/11_gpu_primer/coalesced_cell.hpp, or in chapter 11's
// exercise build the student's exercises/11_gpu_primer/coalesced_cell.hpp. Each variant of
// chapter 11's library sets USP_CH11_EXERCISES (0, 1, or 2 for the mutant copy of
// ./usp test --mutants) for itself and for what links it (chapters/11_gpu_primer/CMakeLists.txt).
#include "chapters/11_gpu_primer/exercise_variant.hpp"
#if USP_CH11_EXERCISES == 2
#include "mutant/solutions/11_gpu_primer/coalesced_cell.hpp"
#elif USP_CH11_EXERCISES == 1
#include "exercises/11_gpu_primer/coalesced_cell.hpp"
#else
#include "solutions/11_gpu_primer/coalesced_cell.hpp"
#endif
