// The attention rungs on the CPU: every block and thread of each kernel's grid run one after the
// other through the same bodies the kernels call (naive_bodies.hpp, flash_bodies.hpp). Between two
// __syncthreads() a correct kernel gives the same result for every order of its threads, and
// "thread 0, then 1, ..., then the barrier" is one such order: each phase becomes a loop over the
// block's threads. What this checks without a GPU: the indexing, the masking, the tiling and the
// online softmax of the kernels' code; what it cannot: the CUDA launch itself.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention/fa1_bodies.hpp"
#include "kernels/attention/flash_backward_bodies.hpp"
#include "kernels/attention/flash_bodies.hpp"
#include "kernels/attention/naive_bodies.hpp"
#include "kernels/attention/tc_flash_backward_bodies.hpp"
#include "kernels/attention/tc_flash_bodies.hpp"
#include "common/error.hpp"
#include "kernels/tensor_core/host_warp.hpp"

namespace usp::attention {

// The backward launchers' first step: dq, dk, dv zeroed (they accumulate).
inline void zero_gradients_host(const AttentionF32& a, float* dq, float* dk, float* dv) {
  std::fill_n(dq, q_numel(a), 0.0f);
  std::fill_n(dk, kv_numel(a), 0.0f);
  std::fill_n(dv, kv_numel(a), 0.0f);
}

// Rung 01: the three kernels' grids in turn. S: [B, H, T, T] workspace.
inline void emulate_naive_forward(const AttentionF32& a, float* S) {
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int i = 0; i < a.T; ++i)
        for (int j = 0; j < a.T; ++j) naive_score(a, b, h, i, j, S);
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int i = 0; i < a.T; ++i) naive_softmax_row(a, b, h, i, S);
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int i = 0; i < a.T; ++i)
        for (int e = 0; e < a.D; ++e) naive_output(a, b, h, i, e, S);
}

// Rung 02: one block per (b, h); thread t owns rows t, t + kBlockRows, ... row_sum: [B, H, T].
inline void emulate_fa1_forward(const AttentionF32& a, float* row_sum) {
  std::vector<float> Ks(kBlockCols * a.D), Vs(kBlockCols * a.D);  // the block's shared memory
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h) {
      const int g = h / (a.H / a.G);
      for (int i = 0; i < a.T; ++i) fa1_init_row(a, b, h, i, row_sum);
      for (int j0 = 0; j0 < a.T; j0 += kBlockCols) {
        const int nk = std::min(kBlockCols, a.T - j0);
        for (int t = 0; t < kBlockRows; ++t) load_kv_tile(a, b, g, j0, nk, t, Ks.data(), Vs.data());
        // __syncthreads()
        for (int t = 0; t < kBlockRows; ++t)
          for (int i = fa1_first_query_tile(a, j0) + t; i < a.T; i += kBlockRows)
            fa1_row_tile_update(a, b, h, i, Ks.data(), Vs.data(), j0, nk, row_sum);
        // __syncthreads()
      }
      for (int i = 0; i < a.T; ++i) fa1_finish_row(a, b, h, i, row_sum);
    }
}

// Rung 03: one block per (b, h, query tile); its threads' registers as arrays.
inline void emulate_flash_forward(const AttentionF32& a) {
  std::vector<float> Ks(kBlockCols * a.D), Vs(kBlockCols * a.D);      // the block's shared memory
  std::vector<float> q(kBlockRows * a.D), acc(kBlockRows * a.D), m(kBlockRows), l(kBlockRows);  // registers
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int i0 = 0; i0 < a.T; i0 += kBlockRows) {
        const int g = h / (a.H / a.G);
        for (int t = 0; t < kBlockRows; ++t) {
          const int i = i0 + t;
          m[t] = -INFINITY, l[t] = 0;
          std::fill_n(acc.begin() + t * a.D, a.D, 0.0f);
          if (i < a.T) std::copy_n(a.q + q_offset(a, b, i, h), a.D, q.begin() + t * a.D);
        }
        const int k_end = a.causal ? std::min(a.T, i0 + kBlockRows) : a.T;
        for (int j0 = 0; j0 < k_end; j0 += kBlockCols) {
          const int nk = std::min(kBlockCols, a.T - j0);
          for (int t = 0; t < kBlockRows; ++t) load_kv_tile(a, b, g, j0, nk, t, Ks.data(), Vs.data());
          // __syncthreads()
          for (int t = 0; t < kBlockRows; ++t)
            if (i0 + t < a.T)
              row_tile_update(a, i0 + t, q.data() + t * a.D, Ks.data(), Vs.data(), j0, nk, m[t], l[t],
                              acc.data() + t * a.D);
          // __syncthreads()
        }
        for (int t = 0; t < kBlockRows; ++t)
          if (i0 + t < a.T) write_row(a, b, h, i0 + t, m[t], l[t], acc.data() + t * a.D);
      }
}

// Rung 04: delta's grid, then one block per (b, h, key tile); a thread's registers as arrays.
inline void emulate_flash_backward(const AttentionBackwardF32& g) {
  const AttentionF32& a = g.f;
  zero_gradients_host(a, g.dq, g.dk, g.dv);
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int i = 0; i < a.T; ++i) delta_row(g, b, h, i);
  std::vector<float> Qs(kBlockRows * a.D), dOs(kBlockRows * a.D), Ls(kBlockRows), Ds(kBlockRows);  // shared
  std::vector<float> k(kBlockCols * a.D), v(kBlockCols * a.D), dk(kBlockCols * a.D), dv(kBlockCols * a.D);  // registers
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int j0 = 0; j0 < a.T; j0 += kBlockCols) {
        for (int t = 0; t < kBlockCols && j0 + t < a.T; ++t) {
          const std::int64_t o = kv_offset(a, b, j0 + t, h / (a.H / a.G));
          std::copy_n(a.k + o, a.D, k.begin() + t * a.D);
          std::copy_n(a.v + o, a.D, v.begin() + t * a.D);
        }
        std::fill(dk.begin(), dk.end(), 0.0f);
        std::fill(dv.begin(), dv.end(), 0.0f);
        for (int i0 = a.causal ? j0 / kBlockRows * kBlockRows : 0; i0 < a.T; i0 += kBlockRows) {
          const int n = std::min(kBlockRows, a.T - i0);
          for (int t = 0; t < kBlockCols; ++t) load_q_tile(g, b, h, i0, n, t, Qs.data(), dOs.data(), Ls.data(), Ds.data());
          // __syncthreads()
          for (int t = 0; t < kBlockCols && j0 + t < a.T; ++t)
            key_row_tile_backward(g, b, h, j0 + t, k.data() + t * a.D, v.data() + t * a.D, Qs.data(), dOs.data(),
                                  Ls.data(), Ds.data(), i0, n, dk.data() + t * a.D, dv.data() + t * a.D);
          // __syncthreads()
        }
        for (int t = 0; t < kBlockCols && j0 + t < a.T; ++t)
          write_key_grads(g, b, h, j0 + t, dk.data() + t * a.D, dv.data() + t * a.D);
      }
}

// Rung 05: every block of the grid in turn, its 128 threads as 128 host threads running the
// kernel's own body with HostLane's barriers, shuffles and mma (host_warp.hpp).
template <int D>
void emulate_flash_forward_bf16_tc_d(const AttentionBf16& a) {
  std::vector<std::uint16_t> smem(kTcSharedElems<D>);
  for (int b = 0; b < a.f.B; ++b)
    for (int h = 0; h < a.f.H; ++h)
      for (int tile = 0; tile * kTcRows < a.f.T; ++tile)
        mma::run_host_block(kTcThreads, [&](int t, mma::HostLane& lane) {
          tc_forward_block<D>(a, tile, h, b, t, smem.data(), lane);
        });
}

inline void emulate_flash_forward_bf16_tc(const AttentionBf16& a) {
  if (a.f.D == 64)
    emulate_flash_forward_bf16_tc_d<64>(a);
  else if (a.f.D == 128)
    emulate_flash_forward_bf16_tc_d<128>(a);
  else
    throw Error("emulate_flash_forward_bf16_tc: head dim 64 or 128 only");
}

// Rung 06: delta's grid, then every block in turn on 128 host threads (the kernel's own body).
template <int D>
void emulate_flash_backward_bf16_tc_d(const AttentionBackwardBf16& g) {
  std::vector<unsigned char> smem(kTcBwdSharedBytes<D>);
  for (int b = 0; b < g.f.f.B; ++b)
    for (int h = 0; h < g.f.f.H; ++h)
      for (int tile = 0; tile * kTcCols < g.f.f.T; ++tile)
        mma::run_host_block(kTcThreads, [&](int t, mma::HostLane& lane) {
          tc_backward_block<D>(g, tile, h, b, t, smem.data(), lane);
        });
}

inline void emulate_flash_backward_bf16_tc(const AttentionBackwardBf16& g) {
  const AttentionF32& a = g.f.f;
  zero_gradients_host(a, g.dq, g.dk, g.dv);
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int i = 0; i < a.T; ++i) tc_delta_row(g, b, h, i);
  if (a.D == 64)
    emulate_flash_backward_bf16_tc_d<64>(g);
  else if (a.D == 128)
    emulate_flash_backward_bf16_tc_d<128>(g);
  else
    throw Error("emulate_flash_backward_bf16_tc: head dim 64 or 128 only");
}

}  // namespace usp::attention
