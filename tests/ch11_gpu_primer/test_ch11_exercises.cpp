// Chapter 11's exercises, checked on the CPU through the very functions the kernels call.
//   11.1 coalesced_cell: every element of C is computed by exactly one thread of the grid, and
//        the 32 threads of a warp touch consecutive addresses of B and C (coalescing) and one
//        address of A (broadcast) at every step k.
//   11.2 smem_load_tiles / smem_tile_dot: each phase on its own, then the whole tiled
//        algorithm emulated block by block (smem_emulation.hpp) against the reference, on sizes
//        that are not multiples of the 32×32 tile.
// Against the exercise stubs (./usp test 11 --exercises) these fail with "exercise 11.1: ..." and
// "exercise 11.2: ...".
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "chapters/11_gpu_primer/coalesced.hpp"
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

TEST_CASE("exercise 11.1: the launcher's own CPU check of the mapping passes", "[ch11]") {
  CHECK_NOTHROW(check_coalesced_cell_on_cpu());
}

// ---- exercise 11.2 -----------------------------------------------------------------------------

TEST_CASE("exercise 11.2: phase 1 copies one element of each tile per thread, zeros outside", "[ch11]") {
  constexpr int T = kSmemTile;
  const int M = 40, N = 50, K = 45;  // the tile at (row0, col0, k0) = (32, 32, 32) overhangs all three
  const HostProblem p = exact_problem(M, N, K, 1.0f, 0.0f);
  const matmul::GemmF32 g{M, N, K, 1.0f, 0.0f, p.A.data(), p.B.data(), nullptr};
  std::vector<float> As(T * T, -99.0f), Bs(T * T, -99.0f);
  for (int t = 0; t < T * T; ++t) smem_load_tiles(g, 32, 32, 32, t / T, t % T, As.data(), Bs.data());
  for (int ty = 0; ty < T; ++ty)
    for (int tx = 0; tx < T; ++tx) {
      INFO("ty " << ty << ", tx " << tx);
      const int a_row = 32 + ty, a_col = 32 + tx, b_row = 32 + ty, b_col = 32 + tx;
      const float a = a_row < M && a_col < K ? p.A[a_row * K + a_col] : 0.0f;
      const float b = b_row < K && b_col < N ? p.B[b_row * N + b_col] : 0.0f;
      REQUIRE(As[ty * T + tx] == a);
      REQUIRE(Bs[ty * T + tx] == b);
    }
}

TEST_CASE("exercise 11.2: phase 2 adds row ty of As times column tx of Bs", "[ch11]") {
  constexpr int T = kSmemTile;
  std::vector<float> As(T * T), Bs(T * T);
  for (int i = 0; i < T * T; ++i) As[i] = static_cast<float>(i % 7 - 3), Bs[i] = static_cast<float>(i % 5 - 2);
  for (const auto& [ty, tx] : std::vector<std::pair<int, int>>{{0, 0}, {3, 17}, {31, 31}, {16, 0}}) {
    float expected = 10.0f;
    for (int k = 0; k < T; ++k) expected += As[ty * T + k] * Bs[k * T + tx];
    CHECK(smem_tile_dot(As.data(), Bs.data(), ty, tx, 10.0f) == expected);
  }
}

TEST_CASE("exercise 11.2: the tiled algorithm, emulated block by block, equals the reference", "[ch11]") {
  for (const Dims d : kSizes) {
    INFO(d.M << "×" << d.N << "×" << d.K);
    // Exact data: any correct order of the additions gives the same bits.
    const HostProblem x = exact_problem(d.M, d.N, d.K, 2.0f, -0.5f);
    std::vector<float> got = x.C0, want = x.C0;
    emulate_smem_tiling({d.M, d.N, d.K, x.alpha, x.beta, x.A.data(), x.B.data(), got.data()});
    matmul::matmul_triple_loop({d.M, d.N, d.K, x.alpha, x.beta, x.A.data(), x.B.data(), want.data()});
    CHECK(got == want);

    // Random data: within the fp32 tolerance of the reference.
    const HostProblem r = random_problem(d.M, d.N, d.K, 0.75f, 1.25f, 5);
    std::vector<float> c = r.C0;
    emulate_smem_tiling({d.M, d.N, d.K, r.alpha, r.beta, r.A.data(), r.B.data(), c.data()});
    const matmul::Verdict v = matmul::check_result(
        c, matmul::expected_gemm(d.M, d.N, d.K, r.alpha, r.beta, r.A, r.B, r.C0, matmul::Accumulation::fp32));
    INFO(v.message);
    CHECK(v.ok);
  }
}

TEST_CASE("exercise 11.2: the launcher's own CPU check of the phases passes", "[ch11]") {
  CHECK_NOTHROW(check_smem_tiling_on_cpu());
}
