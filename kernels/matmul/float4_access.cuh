// 16-byte (float4) access to row-major fp32 matrices, with the edge handling of rungs 06 and 07.
//
// kVec = true: one 16-byte load or store. The caller guarantees that the address is 16-byte
//   aligned and that the matrix's row length is a multiple of 4, so four consecutive elements
//   starting at a multiple-of-4 column are all inside the matrix or all outside.
// kVec = false: the same four elements one float at a time, each guarded: any shape.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/gemm.hpp"

namespace usp::matmul {

// Host side: whether problem g may take the kVec = true path (rows of A, B and C start on
// 16-byte boundaries: K % 4 == 0, N % 4 == 0, and 16-byte-aligned pointers).
inline bool float4_path_ok(const GemmF32& g) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  return g.K % 4 == 0 && g.N % 4 == 0 && aligned(g.A) && aligned(g.B) && aligned(g.C);
}

// m[row][col .. col+4) of a rows×cols matrix; zero where outside.
template <bool kVec>
__device__ __forceinline__ float4 load4(const float* m, int rows, int cols, int row, int col) {
  if (row >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float* p = m + row * cols + col;
  if constexpr (kVec) {
    return col < cols ? *reinterpret_cast<const float4*>(p) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  } else {
    return make_float4(col < cols ? p[0] : 0.0f, col + 1 < cols ? p[1] : 0.0f, col + 2 < cols ? p[2] : 0.0f,
                       col + 3 < cols ? p[3] : 0.0f);
  }
}

// C[row][col + q] = alpha·acc[q] + beta·C[row][col + q] for q < 4, inside the M×N matrix only.
template <bool kVec>
__device__ __forceinline__ void store4_c(const GemmF32& g, int row, int col, const float (&acc)[4]) {
  if (row >= g.M) return;
  float* c = g.C + row * g.N + col;
  if constexpr (kVec) {
    if (col >= g.N) return;
    float4 v = g.beta == 0.0f ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : *reinterpret_cast<float4*>(c);
    store_c(&v.x, g.alpha, g.beta, acc[0]);
    store_c(&v.y, g.alpha, g.beta, acc[1]);
    store_c(&v.z, g.alpha, g.beta, acc[2]);
    store_c(&v.w, g.alpha, g.beta, acc[3]);
    *reinterpret_cast<float4*>(c) = v;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (col + q < g.N) store_c(c + q, g.alpha, g.beta, acc[q]);
  }
}

}  // namespace usp::matmul
