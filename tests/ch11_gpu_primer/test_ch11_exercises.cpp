// Chapter 11's exercises, checked on the CPU through the very functions the kernels call.
//   11.1 coalesced_cell / coalesced_thread: every element of C is computed by exactly one thread
//        of the grid, the 32 threads of a warp touch consecutive addresses of B and C
//        (coalescing) and one address of A (broadcast) at every step k, and the whole grid of
//        threads, run one after the other (coalesced_emulation.hpp), equals the reference on
//        sizes that are not multiples of 32, writing nothing outside C.
//        warp_sectors: hand-worked sector counts of one warp of rung 01 and of rung 02 — interior,
//        rows of B that start mid-sector (N = 100), edge tiles, a warp with nothing to do — and
//        its errors.
//   11.2 smem_tiling_thread: the whole tiled algorithm with rung 03's and rung 04's tiles, every
//        block run on host threads with a real barrier (smem_emulation.hpp), against the
//        reference on sizes that are not multiples of the tiles; what the shared tiles hold; the
//        barriers every thread must reach.
// Against the exercise stubs (./usp test 11 --exercises) these fail with "exercise 11.1: ..." and
// "exercise 11.2: ...".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chapters/11_gpu_primer/coalesced.hpp"
#include "chapters/11_gpu_primer/coalesced_emulation.hpp"
#include "chapters/11_gpu_primer/cpu_checks.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/reference.hpp"
#include "chapters/11_gpu_primer/problem_data.hpp"
#include "chapters/11_gpu_primer/smem_emulation.hpp"
#include "chapters/11_gpu_primer/smem_tiling.hpp"

using namespace usp;
using namespace usp::ch11;
using matmul::ceil_div;

namespace {

struct Dims {
  int M, N, K;
};
const std::vector<Dims> kSizes = {{1, 1, 1}, {32, 32, 32}, {33, 65, 31}, {100, 37, 70}, {64, 96, 129}, {1, 200, 3}};

using Emulation = std::function<void(const matmul::GemmF32&)>;

// run (a rung emulated on the CPU) on every size of kSizes against the reference, on exact data
// bit for bit (any correct order of the additions gives the same bits), C between two guard
// bands that must come back untouched; once more with beta = 0 and C NaN on entry (C must not be
// read); and once on random data within the fp32 tolerance.
void check_rung(const std::string& exercise, const Emulation& run) {
  constexpr float kSentinel = 12345.0f;
  std::vector<std::pair<Dims, float>> cases;
  for (const Dims d : kSizes) cases.push_back({d, -0.5f});
  cases.push_back({kSizes[2], 0.0f});
  for (const auto& [d, beta] : cases) {
    INFO(exercise << ": C = " << 2.0f << "·A·B + " << beta << "·C for " << d.M << "×" << d.N << "×" << d.K);
    const int guard = 64 * d.N + 64;  // room for a wrong kernel's stores from a whole edge tile past C
    const HostProblem x = exact_problem(d.M, d.N, d.K, 2.0f, beta);
    std::vector<float> want = x.C0;
    matmul::matmul_triple_loop({d.M, d.N, d.K, x.alpha, x.beta, x.A.data(), x.B.data(), want.data()});
    std::vector<float> c(x.C0.size() + 2 * static_cast<std::size_t>(guard), kSentinel);
    for (std::size_t i = 0; i < x.C0.size(); ++i) c[guard + i] = beta == 0.0f ? NAN : x.C0[i];
    run({d.M, d.N, d.K, x.alpha, x.beta, x.A.data(), x.B.data(), c.data() + guard});
    for (std::size_t i = 0; i < c.size(); ++i) {
      const bool inside = i >= static_cast<std::size_t>(guard) && i < guard + want.size();
      const std::int64_t e = static_cast<std::int64_t>(i) - guard;
      const float expected = inside ? want[static_cast<std::size_t>(e)] : kSentinel;
      if (!(c[i] == expected))
        FAIL(exercise << ": " << (inside ? "C[" + std::to_string(e / d.N) + "][" + std::to_string(e % d.N) + "]"
                                         : "the element " + std::to_string(e < 0 ? -e : e - d.M * d.N) +
                                               (e < 0 ? " before C" : " past C's end"))
                      << " is " << c[i] << ", expected " << expected);
    }
  }
  const Dims d = kSizes[4];
  INFO(exercise << ": random data, " << d.M << "×" << d.N << "×" << d.K);
  const HostProblem r = random_problem(d.M, d.N, d.K, 0.75f, 1.25f, 5);
  std::vector<float> c = r.C0;
  run({d.M, d.N, d.K, r.alpha, r.beta, r.A.data(), r.B.data(), c.data()});
  const matmul::Verdict v = matmul::check_result(
      c, matmul::expected_gemm(d.M, d.N, d.K, r.alpha, r.beta, r.A, r.B, r.C0, matmul::Accumulation::fp32));
  INFO(v.message);
  CHECK(v.ok);
}

// After the block (bx, by) = (1, 1) of a problem whose tiles overhang A and B at that block, the
// shared tiles hold the block's last step k0: A[row0 + r][k0 + c] and B[k0 + r][col0 + c], 0
// outside the matrices.
template <class Tile>
void check_last_tiles(const std::string& exercise, int M, int N, int K) {
  const HostProblem p = exact_problem(M, N, K, 1.0f, 0.0f);
  std::vector<float> C(static_cast<std::size_t>(M) * N);
  std::vector<float> As(Tile::BM * Tile::BK, NAN), Bs(Tile::BK * Tile::BN, NAN);  // undefined on entry
  emulate_smem_block<Tile>({M, N, K, 1.0f, 0.0f, p.A.data(), p.B.data(), C.data()}, 1, 1, As.data(), Bs.data());
  const int row0 = Tile::BM, col0 = Tile::BN, k0 = (K - 1) / Tile::BK * Tile::BK;
  for (int r = 0; r < Tile::BM; ++r)
    for (int c = 0; c < Tile::BK; ++c) {
      const int row = row0 + r, k = k0 + c;
      const float a = row < M && k < K ? p.A[static_cast<std::size_t>(row) * K + k] : 0.0f;
      INFO(exercise << ": As[" << r << "·" << Tile::BK << " + " << c << "] should be A[" << row << "][" << k << "]"
                    << (row < M && k < K ? "" : " (outside A: 0)") << " = " << a << " after the last step k0 = " << k0);
      REQUIRE(As[static_cast<std::size_t>(r * Tile::BK + c)] == a);
    }
  for (int r = 0; r < Tile::BK; ++r)
    for (int c = 0; c < Tile::BN; ++c) {
      const int k = k0 + r, col = col0 + c;
      const float b = k < K && col < N ? p.B[static_cast<std::size_t>(k) * N + col] : 0.0f;
      INFO(exercise << ": Bs[" << r << "·" << Tile::BN << " + " << c << "] should be B[" << k << "][" << col << "]"
                    << (k < K && col < N ? "" : " (outside B: 0)") << " = " << b << " after the last step k0 = " << k0);
      REQUIRE(Bs[static_cast<std::size_t>(r * Tile::BN + c)] == b);
    }
}

}  // namespace

// ---- exercise 11.1 -----------------------------------------------------------------------------

TEST_CASE("exercise 11.1: the coalesced mapping covers every element of C exactly once", "[ch11]") {
  constexpr int T = kCoalescedTile;
  for (const auto& [M, N] : std::vector<std::pair<int, int>>{{1, 1}, {32, 32}, {33, 65}, {100, 37}, {1000, 1023}}) {
    INFO("C is " << M << "×" << N << ": a grid of " << ceil_div(N, T) << "×" << ceil_div(M, T) << " blocks");
    std::vector<int> hits(static_cast<std::size_t>(M) * N, 0);
    bool inside_own_tile = true;
    for (int by = 0; by < ceil_div(M, T); ++by)
      for (int bx = 0; bx < ceil_div(N, T); ++bx)
        for (int t = 0; t < T * T; ++t) {
          const Cell c = coalesced_cell(bx, by, t);
          if (c.row < by * T || c.row >= (by + 1) * T || c.col < bx * T || c.col >= (bx + 1) * T) inside_own_tile = false;
          if (c.row >= 0 && c.row < M && c.col >= 0 && c.col < N) ++hits[static_cast<std::size_t>(c.row) * N + c.col];
        }
    CHECK(inside_own_tile);
    std::int64_t never = 0, twice = 0;
    for (const int h : hits) never += h == 0, twice += h > 1;
    CHECK(never == 0);
    CHECK(twice == 0);
  }
}

TEST_CASE("exercise 11.1: a warp reads consecutive addresses of B, writes consecutive ones of C, one of A",
          "[ch11]") {
  constexpr int T = kCoalescedTile, kWarp = 32;
  const int M = 100, N = 70, K = 40;
  for (int by = 0; by < ceil_div(M, T); ++by)
    for (int bx = 0; bx < ceil_div(N, T); ++bx)
      for (int warp = 0; warp < T * T / kWarp; ++warp) {
        const Cell first = coalesced_cell(bx, by, warp * kWarp);
        for (int lane = 1; lane < kWarp; ++lane) {
          const Cell c = coalesced_cell(bx, by, warp * kWarp + lane);
          INFO("block (" << bx << ", " << by << "), warp " << warp << ", lane " << lane << ": element (" << c.row
                         << ", " << c.col << "), lane 0 has (" << first.row << ", " << first.col << ")");
          // At any step k of the dot product, the addresses (in floats) the lane touches:
          const int k = 7;
          REQUIRE(c.row * K + k == first.row * K + k);                   // A[row][k]: one address, broadcast
          REQUIRE(k * N + c.col == k * N + first.col + lane);            // B[k][col]: consecutive
          REQUIRE(c.row * N + c.col == first.row * N + first.col + lane);  // C[row][col]: consecutive
        }
      }
}

TEST_CASE("exercise 11.1: the whole grid of threads equals the reference and writes nothing outside C", "[ch11]") {
  // The mapping first: a thread whose element is outside its block's tile could store anywhere,
  // beyond the guard bands, which only cover an edge tile's overhang.
  constexpr int T = kCoalescedTile;
  for (const Dims d : kSizes)
    for (int by = 0; by < ceil_div(d.M, T); ++by)
      for (int bx = 0; bx < ceil_div(d.N, T); ++bx)
        for (int t = 0; t < T * T; ++t) {
          const Cell c = coalesced_cell(bx, by, t);
          if (c.row < by * T || c.row >= (by + 1) * T || c.col < bx * T || c.col >= (bx + 1) * T)
            FAIL("exercise 11.1: coalesced_cell(" << bx << ", " << by << ", " << t << ") = (" << c.row << ", " << c.col
                                                  << ") is outside block (" << bx << ", " << by << ")'s tile");
        }
  check_rung("exercise 11.1 (coalesced_thread)", emulate_coalesced);
}

TEST_CASE("exercise 11.1: the launcher's own CPU check of the thread passes", "[ch11]") {
  CHECK_NOTHROW(check_coalesced_on_cpu());
}

namespace {

// The 32 cells of warp w of block (bx, by), thread t = 32·w + lane computing cell(bx, by, t). The
// tests of warp_sectors give it these cells, not the student's coalesced_cell, so that its
// counts are graded on their own.
using Mapping = Cell (*)(int bx, int by, int t);
Cell rung01_cell(int bx, int by, int t) { return {by * 32 + t % 32, bx * 32 + t / 32}; }  // 01_naive.cu
Cell rung02_cell(int bx, int by, int t) { return {by * 32 + t / 32, bx * 32 + t % 32}; }  // (a), (b) above
WarpCells warp_cells(Mapping cell, int bx, int by, int w) {
  WarpCells cells;
  for (int lane = 0; lane < kWarpSize; ++lane) cells[static_cast<std::size_t>(lane)] = cell(bx, by, w * kWarpSize + lane);
  return cells;
}

// warp_sectors(cells, M, N, K, k) against sectors counted by hand, each matrix named on failure.
void check_sectors(const std::string& what, const WarpCells& cells, Dims d, int k, WarpSectors want) {
  const WarpSectors got = warp_sectors(cells, d.M, d.N, d.K, k);
  const std::string where = "exercise 11.1: warp_sectors, " + what + ", " + std::to_string(d.M) + "×" +
                            std::to_string(d.N) + "×" + std::to_string(d.K) + ", step k = " + std::to_string(k) + ": ";
  INFO(where << "A[row][k] touches " << got.a << " sectors, expected " << want.a);
  CHECK(got.a == want.a);
  INFO(where << "B[k][col] touches " << got.b << " sectors, expected " << want.b);
  CHECK(got.b == want.b);
  INFO(where << "the store of C[row][col] touches " << got.c << " sectors, expected " << want.c);
  CHECK(got.c == want.c);
}

}  // namespace

TEST_CASE("exercise 11.1: warp_sectors of an interior warp: rung 02 A 1, B 4, C 4; rung 01 A 32, B 1, C 32",
          "[ch11]") {
  const Dims d{64, 64, 64};  // N and K multiples of 8: every row starts on a sector boundary
  for (const int k : {0, 5, 63}) {
    // Rung 02, block (1, 1), warp 3: row 35, columns 32..63. A: one address; B: floats
    // 64k+32 .. 64k+63, four whole sectors; C: 35·64+32 .. 35·64+63, four.
    check_sectors("rung 02 block (1, 1) warp 3", warp_cells(rung02_cell, 1, 1, 3), d, k, {1, 4, 4});
    // Rung 01, the same warp: rows 32..63 of column 35. A: 32 floats 64 apart; B: one address;
    // C: 32 floats 64 apart.
    check_sectors("rung 01 block (1, 1) warp 3", warp_cells(rung01_cell, 1, 1, 3), d, k, {32, 1, 32});
  }
  // Rung 01 with K = 4: rows of A are 4 floats apart, two rows per sector: 16 sectors for 32 lanes.
  check_sectors("rung 01 block (1, 1) warp 3", warp_cells(rung01_cell, 1, 1, 3), {64, 64, 4}, 2, {16, 1, 32});
  // What counts is which sectors, not the lanes' order; lanes on one cell share its sectors.
  WarpCells reversed = warp_cells(rung02_cell, 1, 1, 3);
  std::reverse(reversed.begin(), reversed.end());
  check_sectors("rung 02 block (1, 1) warp 3, lanes reversed", reversed, d, 5, {1, 4, 4});
  WarpCells one_cell;
  one_cell.fill(Cell{40, 50});
  check_sectors("32 lanes on the cell (40, 50)", one_cell, d, 7, {1, 1, 1});
}

TEST_CASE("exercise 11.1: warp_sectors with N = 100: a row of B starts mid-sector, 5 sectors at odd k", "[ch11]") {
  const Dims d{64, 100, 10};
  // Rung 02, block (0, 0), warp 0: row 0, columns 0..31. B[k][0] is float 100k: a sector
  // boundary at even k (32 floats, 4 sectors), half-way into one at odd k (floats 100..131:
  // sectors 12..16, 5). C's row 0 starts at float 0: 4 sectors.
  for (int k = 0; k < d.K; ++k)
    check_sectors("rung 02 block (0, 0) warp 0", warp_cells(rung02_cell, 0, 0, 0), d, k, {1, k % 2 == 0 ? 4 : 5, 4});
  // Warp 1 stores row 1 of C, floats 100..131: 5 sectors. Block (1, 0), k = 3: floats 332..363,
  // sectors 41..45.
  check_sectors("rung 02 block (0, 0) warp 1", warp_cells(rung02_cell, 0, 0, 1), d, 2, {1, 4, 5});
  check_sectors("rung 02 block (1, 0) warp 0", warp_cells(rung02_cell, 1, 0, 0), d, 3, {1, 5, 4});
}

TEST_CASE("exercise 11.1: warp_sectors on the edge tiles: only the lanes inside C count", "[ch11]") {
  // Rung 02, N = 36, block (1, 0), warp 0: columns 32..35 inside C, 36..63 outside. Four active
  // lanes: B[1][32..35] are floats 68..71, one sector; C's row 0 floats 32..35, one sector.
  check_sectors("rung 02 block (1, 0) warp 0, columns 32..35 of 36", warp_cells(rung02_cell, 1, 0, 0), {40, 36, 40}, 1,
                {1, 1, 1});
  // Rung 01, M = 36, block (1, 1), warp 3: rows 32..35 of column 35 inside C: A's four rows 40
  // floats apart, 4 sectors; B one; C's four rows 64 floats apart, 4.
  check_sectors("rung 01 block (1, 1) warp 3, rows 32..35 of 36", warp_cells(rung01_cell, 1, 1, 3), {36, 64, 40}, 9,
                {4, 1, 4});
  // A warp with no active lane touches no memory: rung 02's row 33 of 33 rows, rung 01's column
  // 33 of 33 columns.
  check_sectors("rung 02 block (0, 1) warp 1, row 33 of 33", warp_cells(rung02_cell, 0, 1, 1), {33, 64, 16}, 0, {0, 0, 0});
  check_sectors("rung 01 block (1, 0) warp 1, column 33 of 33", warp_cells(rung01_cell, 1, 0, 1), {64, 33, 16}, 15,
                {0, 0, 0});
}

TEST_CASE("exercise 11.1: warp_sectors rejects an empty problem and a step k outside 0..K-1", "[ch11]") {
  const WarpCells cells = warp_cells(rung02_cell, 0, 0, 0);
  REQUIRE(warp_sectors(cells, 5, 5, 9, 8).b == 1);  // k = K-1 is the last step, not an error
  CHECK_THROWS_WITH(warp_sectors(cells, 0, 5, 5, 0), Catch::Contains("warp_sectors: the problem 0×5×5 is empty"));
  CHECK_THROWS_WITH(warp_sectors(cells, 5, 5, 0, 0), Catch::Contains("warp_sectors: the problem 5×5×0 is empty"));
  CHECK_THROWS_WITH(warp_sectors(cells, 5, 5, 9, 9), Catch::Contains("warp_sectors: step k = 9 is outside 0..8 (K = 9)"));
  CHECK_THROWS_WITH(warp_sectors(cells, 5, 5, 9, -1), Catch::Contains("warp_sectors: step k = -1 is outside 0..8"));
}

// ---- exercise 11.2 -----------------------------------------------------------------------------

TEST_CASE("exercise 11.2: rung 03's tile (32×32×32, one element per thread) equals the reference", "[ch11]") {
  check_rung("exercise 11.2 (smem_tiling_thread, rung 03's tile)", emulate_smem_tiling<Rung03Tile>);
}

TEST_CASE("exercise 11.2: rung 04's tile (64×64×8, eight elements per thread) equals the reference", "[ch11]") {
  check_rung("exercise 11.2 (smem_tiling_thread, rung 04's tile)", emulate_smem_tiling<Rung04Tile>);
}

TEST_CASE("exercise 11.2: any tile shape: 32×64×16 tiles, 4 rows per thread, 2 elements of Bs per thread",
          "[ch11]") {
  // Neither rung's shape: 512 threads for 512 elements of As and 1024 of Bs.
  check_rung("exercise 11.2 (smem_tiling_thread, SmemTile<32, 64, 16, 4>)", emulate_smem_tiling<SmemTile<32, 64, 16, 4>>);
}

TEST_CASE("exercise 11.2: the shared tiles hold A's and B's elements, zeros outside the matrices", "[ch11]") {
  // Block (1, 1) overhangs M, N and K with both tiles.
  check_last_tiles<Rung03Tile>("exercise 11.2 (rung 03's tile)", 40, 50, 45);
  check_last_tiles<Rung04Tile>("exercise 11.2 (rung 04's tile)", 70, 100, 13);
  check_last_tiles<SmemTile<32, 64, 16, 4>>("exercise 11.2 (SmemTile<32, 64, 16, 4>)", 40, 100, 20);
}

TEST_CASE("exercise 11.2: the launcher's own CPU check passes", "[ch11]") {
  CHECK_NOTHROW(check_smem_tiling_on_cpu());
}
