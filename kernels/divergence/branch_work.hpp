// Control divergence, the data side: the work each element gets (one of two branches, chosen by
// the element's parity) and the two ways of handing elements to threads.
//
// A warp issues one instruction for its 32 lanes at a time. When lanes disagree on a branch,
// the warp runs one side with the other lanes masked off, then the other side: it pays for
// both. Same work, two arrangements:
//   divergent: thread t takes element t. Even and odd lanes alternate, so every warp takes
//              both branches: about twice the time of one branch.
//   uniform:   warp 2w takes the 32 even elements of [64w, 64w + 64), warp 2w + 1 the 32 odd
//              ones. Every warp takes one branch. (Memory pays a little: a warp now reads
//              every other float, two warps share the same 256 bytes.)
// Everything here is USP_HD so that the kernels and the CPU checks run the same code.
#pragma once
#include <cstdint>

#include "common/hostdevice.hpp"

namespace usp::divergence {

inline constexpr int kWarp = 32;

// The two branches: equal length loops (iters steps), different arithmetic, so the compiler
// cannot merge them into one. Both map [0, 1] into itself and contract, so values stay finite
// and the GPU's fused multiply-adds differ from the CPU's by a few ulps only.
USP_HD float even_branch(float x, int iters) {
  for (int i = 0; i < iters; ++i) x = x * 0.999f + 0.001f;
  return x;
}
USP_HD float odd_branch(float x, int iters) {
  for (int i = 0; i < iters; ++i) x = x * x * 0.5f + 0.25f;
  return x;
}
// The work of element e: the branch is chosen by e's parity.
USP_HD float branch_work(std::int64_t e, float x, int iters) {
  return e % 2 == 0 ? even_branch(x, iters) : odd_branch(x, iters);
}

// The element thread t (global index) takes in each arrangement. Launch threads_for(n)
// threads; a thread whose element is >= n does nothing.
USP_HD std::int64_t divergent_element(std::int64_t t) { return t; }
USP_HD std::int64_t uniform_element(std::int64_t t) {
  const std::int64_t warp = t / kWarp, lane = t % kWarp;
  return 2 * kWarp * (warp / 2) + 2 * lane + warp % 2;
}
// How far a GPU result of branch_work may be from the CPU's. Each step is a multiply and an
// add (x·0.999 + 0.001, or (x·x)·0.5 + 0.25) on values in [0, 1], where an ulp is at most
// 2^-24. The GPU fuses the multiply-add into one FMA (one rounding), the CPU may round twice:
// they differ by at most 1.5 ulp per step, and since both maps contract (|d/dx| <= 1 on
// [0, 1]) an earlier difference never grows. So |gpu - cpu| <= iters · 1.5 · 2^-24.
inline double branch_tolerance(int iters) { return (iters + 1) * 0x1p-23; }

// Threads to launch for n elements: a whole number of warp pairs (64), so the uniform
// arrangement, a permutation of [0, threads_for(n)), covers every element of [0, n) once.
USP_HD std::int64_t threads_for(std::int64_t n) { return (n + 2 * kWarp - 1) / (2 * kWarp) * (2 * kWarp); }

}  // namespace usp::divergence
