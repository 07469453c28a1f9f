// cublaslt_fp8_gemm's preconditions (fp8_gemm.hpp), checked on the host before any CUDA call, so
// that a bad operand is one clear message here rather than cuBLASLt's "not supported" there.
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "kernels/fp8/fp8_gemm.hpp"

namespace usp::fp8 {

void check_fp8_gemm(const Fp8Gemm& g) {
  if (g.M <= 0 || g.N <= 0 || g.K <= 0 || g.M % 16 || g.N % 16 || g.K % 16)
    throw Error("cublaslt_fp8_gemm: M, N, K = " + std::to_string(g.M) + ", " + std::to_string(g.N) + ", " +
                std::to_string(g.K) + " must be positive multiples of 16");
  const struct {
    const char* name;
    const void* ptr;
  } operands[] = {{"A", g.A}, {"B", g.B}, {"scale_a", g.scale_a}, {"scale_b", g.scale_b}, {"D", g.D}};
  for (const auto& o : operands) {
    if (o.ptr == nullptr) throw Error(std::string("cublaslt_fp8_gemm: ") + o.name + " is null");
    const auto address = reinterpret_cast<std::uintptr_t>(o.ptr);
    if (address % kFp8Alignment != 0)
      throw Error(std::string("cublaslt_fp8_gemm: ") + o.name + " at " + std::to_string(address % kFp8Alignment) +
                  " bytes past a " + std::to_string(kFp8Alignment) +
                  "-byte boundary; every operand and scale must start on one (a tensor of its own does)");
  }
}

}  // namespace usp::fp8
