// The launchers' preconditions (gemm.hpp), checked on the host before any CUDA call.
#include "kernels/matmul/gemm.hpp"

#include <cstdint>
#include <limits>

#include "common/error.hpp"

namespace usp::matmul {
namespace {

template <class Gemm>
void check_common(const Gemm& g, const std::string& rung, int rows_per_block, int align_bytes) {
  const std::string shape =
      " (M=" + std::to_string(g.M) + ", N=" + std::to_string(g.N) + ", K=" + std::to_string(g.K) + ")";
  if (g.M < 1 || g.N < 1 || g.K < 1) throw Error(rung + ": M, N and K must be >= 1" + shape);
  if (g.A == nullptr || g.B == nullptr || g.C == nullptr) throw Error(rung + ": A, B and C must not be null");
  const std::int64_t limit = std::numeric_limits<std::int32_t>::max();
  const std::int64_t m = g.M, n = g.N, k = g.K;
  if (m * k > limit || k * n > limit || m * n > limit)
    throw Error(rung + ": M·K, K·N and M·N must each be < 2^31 (the kernels index with 32-bit ints)" + shape);
  const std::int64_t block_rows = rows_per_block > 0 ? (m + rows_per_block - 1) / rows_per_block : 0;
  if (block_rows > 65535)
    throw Error(rung + ": M=" + std::to_string(g.M) + " needs " + std::to_string(block_rows) +
                " blocks along y, more than CUDA's 65535");
  const auto misaligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % align_bytes != 0; };
  if (misaligned(g.A) || misaligned(g.B) || misaligned(g.C))
    throw Error(rung + ": A, B and C must be " + std::to_string(align_bytes) +
                "-byte aligned (cudaMalloc gives 256)");
}

}  // namespace

void check_gemm(const GemmF32& g, const std::string& rung, int rows_per_block, int align_bytes) {
  check_common(g, rung, rows_per_block, align_bytes);
}

void check_gemm(const GemmBf16& g, const std::string& rung, int rows_per_block, int align_bytes) {
  check_common(g, rung, rows_per_block, align_bytes);
}

}  // namespace usp::matmul
