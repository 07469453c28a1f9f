// The bf16 tensor-core instruction the course's tensor-core rungs use (matmul rung 08, attention
// rung 05), PTX for sm_80 and newer:
//   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32   D(16×8) = A(16×16)·B(16×8) + C(16×8)
// The 32 lanes of a warp issue it together; each lane holds a fixed piece of every operand (its
// "fragment"). With grp = lane / 4 and tg = lane % 4 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"):
//   A: 4 registers of 2 bf16   r0 (grp, 2tg..2tg+1)    r1 (grp+8, 2tg..)   r2 (grp, 2tg+8..)   r3 (grp+8, 2tg+8..)
//   B: 2 registers of 2 bf16   r0 (k = 2tg..2tg+1, n = grp)                r1 (k = 2tg+8..2tg+9, n = grp)
//   C, D: 4 floats             v0, v1 (grp, 2tg..2tg+1)                    v2, v3 (grp+8, 2tg..2tg+1)
// and in a register of two bf16 the low 16 bits hold the element with the smaller column / k.
// The functions below are that table, in both directions; kernels load fragments through them,
// and the CPU's version of the instruction (host_warp.hpp) finds operands through the inverses.
#pragma once
#include <cstdint>

#include "common/float_formats.hpp"
#include "common/hostdevice.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#endif

namespace usp::mma {

inline constexpr int kM = 16, kN = 8, kK = 16;

// Lane → element, h ∈ {0, 1} the half of a two-bf16 register.
USP_HD int a_row(int lane, int reg) { return lane / 4 + 8 * (reg % 2); }
USP_HD int a_col(int lane, int reg, int h) { return 2 * (lane % 4) + h + 8 * (reg / 2); }
USP_HD int b_k(int lane, int reg, int h) { return 2 * (lane % 4) + h + 8 * reg; }
USP_HD int b_n(int lane) { return lane / 4; }
USP_HD int c_row(int lane, int v) { return lane / 4 + 8 * (v / 2); }
USP_HD int c_col(int lane, int v) { return 2 * (lane % 4) + v % 2; }

// Element → lane, register, half: where A(row, k), B(k, n) and C(row, n) live.
struct Slot {
  int lane, reg, h;
};
USP_HD Slot a_slot(int row, int k) { return {(row % 8) * 4 + (k % 8) / 2, row / 8 + 2 * (k / 8), k % 2}; }
USP_HD Slot b_slot(int k, int n) { return {n * 4 + (k % 8) / 2, k / 8, k % 2}; }
USP_HD Slot c_slot(int row, int n) { return {(row % 8) * 4 + n / 2, 2 * (row / 8) + n % 2, 0}; }

// Two bf16 (as bits) in one register, lo in the low half.
USP_HD std::uint32_t pack(std::uint16_t lo, std::uint16_t hi) {
  return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
}
USP_HD std::uint16_t half_of(std::uint32_t r, int h) { return static_cast<std::uint16_t>(h ? r >> 16 : r & 0xffffu); }

// Two floats rounded to bf16 (to nearest, ties to even) in one register.
USP_HD std::uint32_t pack_floats(float lo, float hi) {
#if defined(__CUDA_ARCH__)
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x is the low half
  return *reinterpret_cast<const std::uint32_t*>(&v);
#else
  return pack(float_to_bf16(lo), float_to_bf16(hi));
#endif
}

#if defined(__CUDACC__)
// D += A·B for one m16n8k16 tile; every lane of the warp must call it together.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__)
  __trap();  // compiled for a GPU without bf16 mma: the launchers refuse to get here
#endif
}

// Host side of a launcher: throws unless the current device runs bf16 mma.sync (compute
// capability 8.0 or newer). `who` names the launcher in the message.
inline void require_bf16_mma(const char* who) {
  int device = 0, major = 0;
  USP_CUDA_CHECK(cudaGetDevice(&device));
  USP_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 8)
    throw Error(std::string(who) + ": bf16 mma.sync needs compute capability 8.0 or newer; this GPU is " +
                std::to_string(major) + ".x");
}

// The warp-wide operations of a kernel body written for both the GPU and the CPU's thread-per-lane
// emulation (host_warp.hpp's HostLane has the same three).
struct DeviceLane {
  __device__ __forceinline__ void sync_block() { __syncthreads(); }
  __device__ __forceinline__ float shfl_xor(float x, int mask) { return __shfl_xor_sync(0xffffffffu, x, mask); }
  __device__ __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    mma_bf16(d, a, b);
  }
};
#endif

// A body templated on its lane type: __device__ under nvcc (instantiated with DeviceLane), an
// ordinary inline function for the host compiler (instantiated with HostLane).
#if defined(__CUDACC__)
#define USP_LANE_BODY __device__ __forceinline__
#else
#define USP_LANE_BODY inline
#endif

}  // namespace usp::mma
