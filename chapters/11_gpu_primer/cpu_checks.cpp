// The launchers' CPU checks of exercises 11.1 and 11.2 (cpu_checks.hpp).
#include "chapters/11_gpu_primer/cpu_checks.hpp"

#include <functional>
#include <string>
#include <vector>

#include "chapters/11_gpu_primer/coalesced.hpp"
#include "chapters/11_gpu_primer/coalesced_emulation.hpp"
#include "chapters/11_gpu_primer/smem_emulation.hpp"
#include "common/error.hpp"
#include "kernels/matmul/reference.hpp"

namespace usp::ch11 {

namespace {

// `run` (a rung emulated on the CPU) against the reference on a 45×37×70 problem, whose edge
// tiles overhang in every direction for every tile shape of the ladder, element by element. C
// lies between two guard bands as large as an edge tile's overhang, which must come back
// untouched: a wrong body's stores outside C are reported, not left to corrupt the heap.
void check_against_reference(const std::string& what, const std::function<void(const matmul::GemmF32&)>& run) {
  const int M = 45, N = 37, K = 70, guard = 64 * N + 64;
  constexpr float kSentinel = 12345.0f;
  std::vector<float> A(M * K), B(K * N), C(M * N + 2 * guard, kSentinel), expected(M * N);
  // Small integers: products and sums stay exact in fp32, so any correct order gives the same bits.
  for (int i = 0; i < M * K; ++i) A[i] = static_cast<float>((i * 7) % 11 - 5);
  for (int i = 0; i < K * N; ++i) B[i] = static_cast<float>((i * 5) % 7 - 3);
  for (int i = 0; i < M * N; ++i) C[guard + i] = expected[i] = static_cast<float>(i % 5 - 2);
  run({M, N, K, 2.0f, -1.0f, A.data(), B.data(), C.data() + guard});
  matmul::matmul_triple_loop({M, N, K, 2.0f, -1.0f, A.data(), B.data(), expected.data()});
  const std::string problem = ", run on the CPU for a " + std::to_string(M) + "×" + std::to_string(N) + "×" +
                              std::to_string(K) + " problem, ";
  for (int i = 0; i < guard; ++i) {
    if (!(C[i] == kSentinel))
      throw Error(what + problem + "writes " + std::to_string(guard - i) + " elements before C[0][0]");
    if (!(C[guard + M * N + i] == kSentinel))
      throw Error(what + problem + "writes " + std::to_string(i) + " elements past the end of C");
  }
  for (int i = 0; i < M * N; ++i)
    if (!(C[guard + i] == expected[i]))
      throw Error(what + problem + "gives C[" + std::to_string(i / N) + "][" + std::to_string(i % N) +
                  "] = " + std::to_string(C[guard + i]) + " instead of " + std::to_string(expected[i]));
}

}  // namespace

void check_coalesced_on_cpu() {
  constexpr int T = kCoalescedTile;
  const int bx = 1, by = 2;
  std::vector<int> hits(T * T, 0);
  for (int t = 0; t < T * T; ++t) {
    const Cell c = coalesced_cell(bx, by, t);
    const int r = c.row - by * T, q = c.col - bx * T;
    if (r < 0 || r >= T || q < 0 || q >= T)
      throw Error("coalesced_cell(" + std::to_string(bx) + ", " + std::to_string(by) + ", " + std::to_string(t) +
                  ") = (" + std::to_string(c.row) + ", " + std::to_string(c.col) + ") is outside the block's tile");
    if (++hits[r * T + q] > 1)
      throw Error("coalesced_cell gives element (" + std::to_string(c.row) + ", " + std::to_string(c.col) +
                  ") to two threads of one block");
    if (t % 32 != 0) {
      const Cell prev = coalesced_cell(bx, by, t - 1);
      if (prev.row != c.row || prev.col + 1 != c.col)
        throw Error("coalesced_cell is not coalesced: threads " + std::to_string(t - 1) + " and " + std::to_string(t) +
                    " of one warp get (" + std::to_string(prev.row) + ", " + std::to_string(prev.col) + ") and (" +
                    std::to_string(c.row) + ", " + std::to_string(c.col) + "), not one row's consecutive columns");
    }
  }
  check_against_reference("coalesced_thread (coalesced_cell.hpp) over rung 02's grid", emulate_coalesced);
}

void check_smem_tiling_on_cpu() {
  check_against_reference("smem_tiling_thread (smem_tile_body.hpp) with rung 03's tile",
                          emulate_smem_tiling<Rung03Tile>);
  check_against_reference("smem_tiling_thread (smem_tile_body.hpp) with rung 04's tile",
                          emulate_smem_tiling<Rung04Tile>);
}

}  // namespace usp::ch11
