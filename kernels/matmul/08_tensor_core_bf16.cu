// Rung 08, tensor cores. Changes from rung 07: bf16 inputs (fp32 accumulation and output), and
// the products done by warp-wide mma.sync instructions on 16×8×16 blocks instead of FMAs.
// Why faster: one instruction does 2048 multiply-adds for the whole warp, where rungs 01-07 issue
// one FMA per thread, on tensor cores with many times the throughput of the fp32 units; bf16
// also halves the bytes each tile load moves.
//
// The instruction (PTX, sm_80 and newer, kernels/tensor_core/m16n8k16.hpp; Hopper's faster wgmma
// needs sm_90a and is left for later chapters):
//   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32  D(16×8) = A(16×16)·B(16×8) + C(16×8)
// Each of the 32 lanes holds a fixed piece of each operand ("fragment"), with
// grp = lane / 4 and tg = lane % 4:
//   A: 4 registers of 2 bf16:  (grp, 2tg..2tg+1)  (grp+8, 2tg..)  (grp, 2tg+8..)  (grp+8, 2tg+8..)
//   B: 2 registers of 2 bf16:  (k = 2tg..2tg+1, n = grp)          (k = 2tg+8..2tg+9, n = grp)
//   C, D: 4 floats:            (grp, 2tg..2tg+1)                  (grp+8, 2tg..2tg+1)
// (the low 16 bits of a register hold the element with the smaller column / k index).
//
// Block: 256 threads = 8 warps, BM×BN = 128×128 tile of C, BK = 32 (two k16 steps).
//   shared As: BM×(BK+8) bf16, As[r][c] = A[row0 + r][k0 + c]
//   shared Bs: BK×(BN+8) bf16, Bs[r][c] = B[k0 + r][col0 + c]
//   The +8 padding shifts consecutive rows by 4 banks, so the 8 rows a fragment load touches
//   land in different banks.
// Warps: 2×4, each owning a 64×32 tile of C = 4×4 mma tiles of 16×8: 16 mma per k16 step and
// 64 fp32 accumulators per thread.
// Loading: with K % 8 == 0 and N % 8 == 0 (and 16-byte-aligned pointers) rows of 8 bf16 are
// copied 16 bytes at a time; otherwise element by element, guarded (kVec = false).
// Not done here, and why cuBLAS is still far ahead: cp.async double buffering (overlap the next
// tile's load with this tile's math), ldmatrix fragment loads, and on Hopper wgmma + TMA.
#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "common/error.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/rungs.hpp"
#include "kernels/tensor_core/m16n8k16.hpp"

namespace usp::matmul {
namespace {

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int kWarpsM = 2, kWarpsN = 4, kThreads = 32 * kWarpsM * kWarpsN;  // 256
constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;                           // 64×32 per warp
constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 16;
constexpr int kTilesM = WM / MMA_M, kTilesN = WN / MMA_N;                    // 4×4 mma tiles per warp
constexpr int LDA = BK + 8, LDB = BN + 8;                                     // padded shared rows
constexpr int kChunk = 8;                                                     // bf16 per 16-byte copy
constexpr int kChunksA = BM * BK / kChunk / kThreads, kChunksB = BK * BN / kChunk / kThreads;  // 2, 2
static_assert(kChunksA == 2 && kChunksB == 2, "each thread copies two 16-byte chunks of each tile");
static_assert((LDA * 2) % 16 == 0 && (LDB * 2) % 16 == 0, "padded rows keep 16-byte alignment");

// Copies m[row][col .. col+8) of a rows×cols bf16 matrix to dst (shared), zeros outside.
template <bool kVec>
__device__ __forceinline__ void copy8(std::uint16_t* dst, const std::uint16_t* m, int rows, int cols, int row,
                                      int col) {
  if constexpr (kVec) {  // cols % 8 == 0: the 8 are all inside or all outside
    const uint4 v = (row < rows && col < cols) ? *reinterpret_cast<const uint4*>(m + row * cols + col)
                                               : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(dst) = v;
  } else {
#pragma unroll
    for (int q = 0; q < kChunk; ++q)
      dst[q] = (row < rows && col + q < cols) ? m[row * cols + col + q] : std::uint16_t{0};
  }
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads) tensor_core_kernel(GemmBf16 p) {
  __shared__ __align__(16) std::uint16_t As[BM * LDA];
  __shared__ __align__(16) std::uint16_t Bs[BK * LDB];
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  const int grp = lane / 4, tg = lane % 4;
  const int row0 = static_cast<int>(blockIdx.y) * BM, col0 = static_cast<int>(blockIdx.x) * BN;
  const int warp_row = (warp / kWarpsN) * WM, warp_col = (warp % kWarpsN) * WN;

  float acc[kTilesM][kTilesN][4] = {};
  for (int k0 = 0; k0 < p.K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < kChunksA; ++i) {
      const int idx = t + i * kThreads, r = idx / (BK / kChunk), c = (idx % (BK / kChunk)) * kChunk;
      copy8<kVec>(&As[r * LDA + c], p.A, p.M, p.K, row0 + r, k0 + c);
    }
#pragma unroll
    for (int i = 0; i < kChunksB; ++i) {
      const int idx = t + i * kThreads, r = idx / (BN / kChunk), c = (idx % (BN / kChunk)) * kChunk;
      copy8<kVec>(&Bs[r * LDB + c], p.B, p.K, p.N, k0 + r, col0 + c);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += MMA_K) {
      std::uint32_t a[kTilesM][4], b[kTilesN][2];
#pragma unroll
      for (int mt = 0; mt < kTilesM; ++mt) {
        const std::uint16_t* s = &As[(warp_row + mt * MMA_M + grp) * LDA + kk + 2 * tg];
        a[mt][0] = *reinterpret_cast<const std::uint32_t*>(s);
        a[mt][1] = *reinterpret_cast<const std::uint32_t*>(s + 8 * LDA);
        a[mt][2] = *reinterpret_cast<const std::uint32_t*>(s + 8);
        a[mt][3] = *reinterpret_cast<const std::uint32_t*>(s + 8 * LDA + 8);
      }
#pragma unroll
      for (int nt = 0; nt < kTilesN; ++nt) {
        const std::uint16_t* s = &Bs[(kk + 2 * tg) * LDB + warp_col + nt * MMA_N + grp];
        b[nt][0] = mma::pack(s[0], s[LDB]);
        b[nt][1] = mma::pack(s[8 * LDB], s[9 * LDB]);
      }
#pragma unroll
      for (int mt = 0; mt < kTilesM; ++mt)
#pragma unroll
        for (int nt = 0; nt < kTilesN; ++nt) mma::mma_bf16(acc[mt][nt], a[mt], b[nt]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int mt = 0; mt < kTilesM; ++mt)
#pragma unroll
    for (int nt = 0; nt < kTilesN; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // h = 0: row grp, h = 1: row grp + 8
        const int row = row0 + warp_row + mt * MMA_M + grp + 8 * h;
        const int col = col0 + warp_col + nt * MMA_N + 2 * tg;
        if (row >= p.M) continue;
        if (col < p.N) store_c(&p.C[row * p.N + col], p.alpha, p.beta, acc[mt][nt][2 * h]);
        if (col + 1 < p.N) store_c(&p.C[row * p.N + col + 1], p.alpha, p.beta, acc[mt][nt][2 * h + 1]);
      }
}

}  // namespace

// Preconditions: those of check_gemm (gemm.hpp), and a current device of compute capability
// 8.0 or newer (bf16 mma.sync). The 16-byte copy path runs when K % 8 == 0, N % 8 == 0 and A,
// B are 16-byte aligned; otherwise the element-wise path (same result).
void matmul_08_tensor_core_bf16(const GemmBf16& p) {
  check_gemm(p, "matmul_08_tensor_core_bf16", BM);
  mma::require_bf16_mma("matmul_08_tensor_core_bf16");
  const auto aligned16 = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  const dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
  if (p.K % kChunk == 0 && p.N % kChunk == 0 && aligned16(p.A) && aligned16(p.B))
    tensor_core_kernel<true><<<grid, kThreads, 0, cuda::compute_stream()>>>(p);
  else
    tensor_core_kernel<false><<<grid, kThreads, 0, cuda::compute_stream()>>>(p);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
