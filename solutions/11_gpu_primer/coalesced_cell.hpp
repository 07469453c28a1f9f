// Reference solution of exercise 11.1: one thread of rung 02, the coalesced matmul — which
// element of C it computes, and computing it — and what one warp's accesses cost in sectors.
//
// Split t into a warp index and a lane: t = 32·w + lane (t / 32 and t % 32). Giving the lane
// the column and the warp the row puts a warp's 32 threads on 32 consecutive columns of one
// row: consecutive addresses of B and C, one address of A. (Rung 01 does the opposite — lane
// -> row — and every load of A by a warp touches 32 different rows.)
// Included by chapters/11_gpu_primer/coalesced.hpp, which declares both and states the contract,
// in the solution build of chapter 11's library (USP_CH11_EXERCISES=0).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "chapters/11_gpu_primer/coalesced.hpp"
#include "common/error.hpp"
#include "kernels/matmul/epilogue.hpp"

namespace usp::ch11 {

USP_HD Cell coalesced_cell(int bx, int by, int t) {
  const int warp = t / kCoalescedTile, lane = t % kCoalescedTile;
  return {by * kCoalescedTile + warp, bx * kCoalescedTile + lane};
}

USP_HD void coalesced_thread(const matmul::GemmF32& g, int bx, int by, int t) {
  const Cell c = coalesced_cell(bx, by, t);
  // The edge tiles overhang when M or N is not a multiple of 32: both bounds, since a column
  // past N would still be a valid address (the next row's) and a row past M would not.
  if (c.row >= g.M || c.col >= g.N) return;
  const float* a = g.A + c.row * g.K;  // row `row` of A: K consecutive floats
  const float* b = g.B + c.col;        // column `col` of B: one float every N
  float acc = 0.0f;
  for (int k = 0; k < g.K; ++k) acc += a[k] * b[k * g.N];
  matmul::store_c(&g.C[c.row * g.N + c.col], g.alpha, g.beta, acc);
}

// The cost. A sector is 8 floats and each matrix starts on a sector boundary (256-byte aligned),
// so the float at offset e from a matrix's start (in floats) lies in that matrix's sector e / 8,
// whatever row it belongs to: a row of B begins mid-sector when k·N is not a multiple of 8. A
// warp's cost is then the number of distinct e / 8 over its active lanes, for each matrix.

// The number of distinct values among sectors[0 .. n-1] (n <= 32: sorting them is enough).
inline int distinct_sectors(std::array<std::int64_t, kWarpSize>& sectors, int n) {
  std::sort(sectors.begin(), sectors.begin() + n);
  return static_cast<int>(std::unique(sectors.begin(), sectors.begin() + n) - sectors.begin());
}

inline WarpSectors warp_sectors(const WarpCells& cells, int M, int N, int K, int k) {
  if (M < 1 || N < 1 || K < 1)
    throw Error("warp_sectors: the problem " + std::to_string(M) + "×" + std::to_string(N) + "×" +
                std::to_string(K) + " is empty: M, N and K must be >= 1");
  if (k < 0 || k >= K)
    throw Error("warp_sectors: step k = " + std::to_string(k) + " is outside 0.." + std::to_string(K - 1) +
                " (K = " + std::to_string(K) + ")");
  constexpr std::int64_t kFloatsPerSector = kSectorBytes / sizeof(float);  // 8
  // The sector of each active lane's element of A, B and C; 64-bit, as row·K + k may pass 2^31.
  std::array<std::int64_t, kWarpSize> a{}, b{}, c{};
  int active = 0;
  for (const Cell& cell : cells) {
    if (cell.row < 0 || cell.row >= M || cell.col < 0 || cell.col >= N) continue;  // touches nothing
    const std::int64_t row = cell.row, col = cell.col;
    a[active] = (row * K + k) / kFloatsPerSector;                // A[row][k]
    b[active] = (std::int64_t{k} * N + col) / kFloatsPerSector;  // B[k][col]
    c[active] = (row * N + col) / kFloatsPerSector;              // C[row][col]
    ++active;
  }
  return {distinct_sectors(a, active), distinct_sectors(b, active), distinct_sectors(c, active)};
}

}  // namespace usp::ch11
