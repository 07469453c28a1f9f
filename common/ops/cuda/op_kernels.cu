// The CUDA ops' kernels: each thread finds its index and calls its body (op_bodies.hpp).
//   element kernels   a 1-d grid of 256-thread blocks, one thread per element
//   column kernels    one thread per column (RMSNorm's dw: 32 threads per column, one per row lane)
//   row kernels       one block of kRowThreads threads per row, partials reduced in the block
//                     (warp shuffles, then one value per warp through shared memory)
#include "common/ops/cuda/op_kernels.hpp"

#include <cuda_runtime.h>

#include "common/cuda/block_reduce.cuh"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "common/float_formats.hpp"

namespace usp::ops::cuda_kernels {

namespace body = cuda_body;

namespace {

constexpr int kThreads = 256;     // element and column kernels
constexpr int kRowThreads = 256;  // row kernels: a multiple of 32

unsigned blocks_for(i64 n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__device__ i64 global_index() { return static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; }

__device__ float block_sum(float v) { return cuda::block_sum<kRowThreads>(v); }
__device__ float block_max(float v) { return cuda::block_max<kRowThreads>(v); }

// F: a format of float_formats.hpp (its codec, exactly the CPU's).
template <class F>
__global__ void widen_kernel(const typename F::Storage* src, float* dst, i64 n) {
  const i64 i = global_index();
  if (i < n) dst[i] = decode_float<F>(src[i]);
}
template <class F>
__global__ void narrow_kernel(const float* src, typename F::Storage* dst, i64 n) {
  const i64 i = global_index();
  if (i < n) dst[i] = encode_float<F>(src[i]);
}

__global__ void add_kernel(const float* x, float* y, i64 n) {
  const i64 i = global_index();
  if (i < n) body::add(i, x, y);
}
__global__ void scale_kernel(float s, float* y, i64 n) {
  const i64 i = global_index();
  if (i < n) body::scale(i, s, y);
}
__global__ void swiglu_forward_kernel(const float* g, const float* u, float* z, i64 n) {
  const i64 i = global_index();
  if (i < n) body::swiglu_forward(i, g, u, z);
}
__global__ void swiglu_backward_kernel(const float* dz, const float* g, const float* u, float* dg, float* du, i64 n) {
  const i64 i = global_index();
  if (i < n) body::swiglu_backward(i, dz, g, u, dg, du);
}
__global__ void embedding_forward_kernel(const std::int32_t* tokens, const float* table, i64 C, float* out, i64 n) {
  const i64 i = global_index();
  if (i < n) body::embedding_forward(i, tokens, table, C, out);
}
__global__ void embedding_backward_kernel(const std::int32_t* tokens, const float* dout, i64 N, i64 C, float* dtable) {
  const i64 c = global_index();
  if (c < C) body::embedding_backward_column(c, tokens, dout, N, C, dtable);
}
__global__ void rope_kernel(float* x, const float* cos_sin, i64 T, i64 H, i64 D, float sign, i64 pairs) {
  const i64 p = global_index();
  if (p < pairs) body::rope_pair(p, T, H, D, cos_sin, sign, x);
}
__global__ void adamw_kernel(body::AdamWStep s, const float* g, float* w, float* m, float* v, i64 n) {
  const i64 i = global_index();
  if (i < n) body::adamw(i, s, g[i], w, m, v);
}
// G: the narrow gradients' format (Bf16Format or F16Format), widened as they are read.
template <class G>
__global__ void adamw_narrow_kernel(body::AdamWStep s, const typename G::Storage* g, float* w, float* m, float* v,
                                    i64 n) {
  const i64 i = global_index();
  if (i < n) body::adamw(i, s, decode_float<G>(g[i]), w, m, v);
}

__global__ void rmsnorm_forward_kernel(const float* x, const float* w, float eps, i64 C, float* y, float* rstd) {
  const i64 n = blockIdx.x;
  const int t = threadIdx.x;
  const float r = body::rmsnorm_rstd(block_sum(body::rmsnorm_partial(n, t, kRowThreads, x, C)), C, eps);
  if (t == 0) rstd[n] = r;
  body::rmsnorm_write(n, t, kRowThreads, x, w, r, C, y);
}
__global__ void rmsnorm_backward_dx_kernel(const float* dy, const float* x, const float* w, const float* rstd, i64 C,
                                           float* dx) {
  const i64 n = blockIdx.x;
  const int t = threadIdx.x;
  const float sum_gx = block_sum(body::rmsnorm_backward_partial(n, t, kRowThreads, dy, x, w, C));
  body::rmsnorm_backward_write(n, t, kRowThreads, dy, x, w, rstd[n], sum_gx, C, dx);
}
// A block of kDwCols columns × kDwLanes row lanes: each warp reads 32 neighbouring columns of a row
// (coalesced), and row 0 of the block adds the lanes' partials in a fixed order (deterministic).
constexpr int kDwCols = 32;
__global__ void rmsnorm_dw_kernel(const float* dy, const float* x, const float* rstd, i64 N, i64 C, float* dw) {
  __shared__ float part[body::kDwLanes][kDwCols + 1];  // +1: lanes of one column in different banks
  const i64 c = static_cast<i64>(blockIdx.x) * kDwCols + threadIdx.x;
  const int lane = static_cast<int>(threadIdx.y);
  part[lane][threadIdx.x] = c < C ? body::rmsnorm_dw_partial(c, lane, dy, x, rstd, N, C) : 0.0f;
  __syncthreads();
  if (lane == 0 && c < C) {
    float acc = 0.0f;
    for (int j = 0; j < body::kDwLanes; ++j) acc += part[j][threadIdx.x];
    dw[c] += acc;
  }
}

__global__ void cross_entropy_forward_kernel(const float* logits, const std::int32_t* targets, i64 V, float* row_loss) {
  const i64 n = blockIdx.x;
  const int t = threadIdx.x;
  const float* x = logits + n * V;
  const float m = block_max(body::row_max_partial(x, V, t, kRowThreads));
  const float sum = block_sum(body::row_sum_exp_partial(x, V, m, t, kRowThreads));
  if (t == 0) row_loss[n] = body::cross_entropy_row_loss(m, sum, x[targets[n]]);
}
__global__ void cross_entropy_backward_kernel(const float* logits, const std::int32_t* targets, i64 V, float k,
                                              float* dlogits) {
  const i64 n = blockIdx.x;
  const int t = threadIdx.x;
  const float* x = logits + n * V;
  const float m = block_max(body::row_max_partial(x, V, t, kRowThreads));
  const float sum = block_sum(body::row_sum_exp_partial(x, V, m, t, kRowThreads));
  __syncthreads();  // every thread has read the row before any writes it (dlogits may be logits)
  body::cross_entropy_backward_write(x, V, targets[n], m, sum, k, t, kRowThreads, dlogits + n * V);
}

__global__ void shard_row_max_kernel(const float* logits, i64 V, float* row_max) {
  const i64 n = blockIdx.x;
  const int t = threadIdx.x;
  const float m = block_max(body::row_max_partial(logits + n * V, V, t, kRowThreads));
  if (t == 0) row_max[n] = m;
}
__global__ void shard_sum_exp_kernel(const float* logits, const std::int32_t* targets, i64 V, i64 begin,
                                     const float* row_max, float* sum_exp, float* target_logit) {
  const i64 n = blockIdx.x;
  const int t = threadIdx.x;
  const float* x = logits + n * V;
  const float s = block_sum(body::row_sum_exp_partial(x, V, row_max[n], t, kRowThreads));
  if (t == 0) {
    sum_exp[n] = s;
    target_logit[n] = body::shard_target_logit(x, V, targets[n], begin);
  }
}
__global__ void shard_cross_entropy_backward_kernel(const float* logits, const std::int32_t* targets, i64 V, i64 begin,
                                                    const float* lse, float k, float* dlogits) {
  const i64 n = blockIdx.x;
  const auto local = static_cast<std::int32_t>(static_cast<i64>(targets[n]) - begin);
  body::cross_entropy_backward_write(logits + n * V, V, local, lse[n], 1.0f, k, static_cast<int>(threadIdx.x),
                                     kRowThreads, dlogits + n * V);
}

__global__ void attention_block_forward_kernel(body::AttentionBlock a, const float* q, const float* k, const float* v,
                                              float* scratch, float* out, float* lse) {
  const i64 r = blockIdx.x;
  const int t = threadIdx.x;
  float* s = scratch + r * a.Tk;
  const float m = block_max(body::block_scores_partial(a, q, k, r, t, kRowThreads, s));
  const float sum = block_sum(body::block_exp_partial(a, m, t, kRowThreads, s));
  __syncthreads();  // every e^(s - m) of the row is written before any thread reads them all
  body::block_out_write(a, v, s, sum > 0.0f ? 1.0f / sum : 0.0f, r, t, kRowThreads, out);
  if (t == 0) lse[r] = body::block_lse(m, sum);
}
__global__ void attention_block_backward_rows_kernel(body::AttentionBlock a, const float* dout, const float* dlse,
                                                     const float* q, const float* k, const float* v, const float* out,
                                                     const float* lse, float* P, float* dS, float* dq) {
  const i64 r = blockIdx.x;
  const int t = threadIdx.x;
  const float delta = block_sum(body::block_delta_partial(a, dout, out, r, t, kRowThreads));
  body::block_ds_row(a, q, k, v, dout, lse[r], delta, dlse ? dlse[r] : 0.0f, r, t, kRowThreads, P + r * a.Tk,
                     dS + r * a.Tk);
  __syncthreads();  // the row's dS is whole before dq reads it
  body::block_dq_write(a, k, dS + r * a.Tk, r, t, kRowThreads, dq);
}
__global__ void attention_block_backward_columns_kernel(body::AttentionBlock a, const float* q, const float* dout,
                                                        const float* P, const float* dS, float* dk, float* dv) {
  body::block_dkv_column(a, q, dout, P, dS, blockIdx.x, static_cast<int>(threadIdx.x), kRowThreads, dk, dv);
}

__global__ void causal_softmax_kernel(float* p, i64 T, i64 r0) {
  const i64 r = blockIdx.x;
  const int t = threadIdx.x;
  float* row = p + r * T;
  const i64 len = r0 + r + 1;
  const float m = block_max(body::row_max_partial(row, len, t, kRowThreads));
  const float sum = block_sum(body::row_sum_exp_partial(row, len, m, t, kRowThreads));
  __syncthreads();  // the row is read whole before it is overwritten
  body::row_softmax_write(row, len, T, m, 1.0f / sum, t, kRowThreads, row);
}
__global__ void causal_softmax_backward_kernel(const float* p, float* ds, i64 T, i64 r0) {
  const i64 r = blockIdx.x;
  const int t = threadIdx.x;
  const i64 len = r0 + r + 1;
  const float dot = block_sum(body::row_dot_partial(ds + r * T, p + r * T, len, t, kRowThreads));
  __syncthreads();
  body::softmax_backward_write(p + r * T, len, T, dot, t, kRowThreads, ds + r * T);
}

}  // namespace

// Launches kernel on the compute stream unless the grid is empty, then checks the launch.
#define USP_LAUNCH(grid, block, kernel, ...)                                          \
  do {                                                                               \
    if ((grid) > 0) kernel<<<(grid), (block), 0, cuda::compute_stream()>>>(__VA_ARGS__); \
    USP_CUDA_CHECK(cudaGetLastError());                                              \
  } while (0)

void widen(DType src_type, const void* src, float* dst, i64 n) {
  using u16 = std::uint16_t;
  if (src_type == DType::bf16)
    USP_LAUNCH(blocks_for(n), kThreads, widen_kernel<Bf16Format>, static_cast<const u16*>(src), dst, n);
  else if (src_type == DType::f16)
    USP_LAUNCH(blocks_for(n), kThreads, widen_kernel<F16Format>, static_cast<const u16*>(src), dst, n);
  else
    throw Error(std::string("cuda widen: unsupported dtype ") + dtype_name(src_type));
}

void narrow(const float* src, DType dst_type, void* dst, i64 n) {
  using u16 = std::uint16_t;
  if (dst_type == DType::bf16)
    USP_LAUNCH(blocks_for(n), kThreads, narrow_kernel<Bf16Format>, src, static_cast<u16*>(dst), n);
  else if (dst_type == DType::f16)
    USP_LAUNCH(blocks_for(n), kThreads, narrow_kernel<F16Format>, src, static_cast<u16*>(dst), n);
  else
    throw Error(std::string("cuda narrow: unsupported dtype ") + dtype_name(dst_type));
}

void add(const float* x, float* y, i64 n) { USP_LAUNCH(blocks_for(n), kThreads, add_kernel, x, y, n); }
void scale(float s, float* y, i64 n) { USP_LAUNCH(blocks_for(n), kThreads, scale_kernel, s, y, n); }
void swiglu_forward(const float* g, const float* u, float* z, i64 n) {
  USP_LAUNCH(blocks_for(n), kThreads, swiglu_forward_kernel, g, u, z, n);
}
void swiglu_backward(const float* dz, const float* g, const float* u, float* dg, float* du, i64 n) {
  USP_LAUNCH(blocks_for(n), kThreads, swiglu_backward_kernel, dz, g, u, dg, du, n);
}
void embedding_forward(const std::int32_t* tokens, const float* table, i64 N, i64 C, float* out) {
  USP_LAUNCH(blocks_for(N * C), kThreads, embedding_forward_kernel, tokens, table, C, out, N * C);
}
void embedding_backward(const std::int32_t* tokens, const float* dout, i64 N, i64 C, float* dtable) {
  USP_LAUNCH(blocks_for(C), kThreads, embedding_backward_kernel, tokens, dout, N, C, dtable);
}
void rope(float* x, const float* cos_sin, i64 B, i64 T, i64 H, i64 D, float sign) {
  const i64 pairs = B * T * H * (D / 2);
  USP_LAUNCH(blocks_for(pairs), kThreads, rope_kernel, x, cos_sin, T, H, D, sign, pairs);
}
void adamw(const cuda_body::AdamWStep& s, DType g_type, const void* g, float* w, float* m, float* v, i64 n) {
  switch (g_type) {
    case DType::f32:
      USP_LAUNCH(blocks_for(n), kThreads, adamw_kernel, s, static_cast<const float*>(g), w, m, v, n);
      return;
    case DType::bf16:
      USP_LAUNCH(blocks_for(n), kThreads, adamw_narrow_kernel<Bf16Format>, s, static_cast<const std::uint16_t*>(g),
                 w, m, v, n);
      return;
    case DType::f16:
      USP_LAUNCH(blocks_for(n), kThreads, adamw_narrow_kernel<F16Format>, s, static_cast<const std::uint16_t*>(g),
                 w, m, v, n);
      return;
    default: throw Error(std::string("cuda adamw: unsupported gradient dtype ") + dtype_name(g_type));
  }
}
void rmsnorm_forward(const float* x, const float* w, float eps, i64 N, i64 C, float* y, float* rstd) {
  USP_LAUNCH(static_cast<unsigned>(N), kRowThreads, rmsnorm_forward_kernel, x, w, eps, C, y, rstd);
}
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd, i64 N, i64 C, float* dx,
                      float* dw) {
  USP_LAUNCH(static_cast<unsigned>(N), kRowThreads, rmsnorm_backward_dx_kernel, dy, x, w, rstd, C, dx);
  USP_LAUNCH(static_cast<unsigned>((C + kDwCols - 1) / kDwCols), dim3(kDwCols, body::kDwLanes), rmsnorm_dw_kernel, dy,
             x, rstd, N, C, dw);
}
void cross_entropy_forward(const float* logits, const std::int32_t* targets, i64 N, i64 V, float* row_loss) {
  USP_LAUNCH(static_cast<unsigned>(N), kRowThreads, cross_entropy_forward_kernel, logits, targets, V, row_loss);
}
void cross_entropy_backward(const float* logits, const std::int32_t* targets, i64 N, i64 V, float k,
                            float* dlogits) {
  USP_LAUNCH(static_cast<unsigned>(N), kRowThreads, cross_entropy_backward_kernel, logits, targets, V, k, dlogits);
}
void shard_row_max(const float* logits, i64 N, i64 V_r, float* row_max) {
  USP_LAUNCH(static_cast<unsigned>(N), kRowThreads, shard_row_max_kernel, logits, V_r, row_max);
}
void shard_sum_exp(const float* logits, const std::int32_t* targets, i64 N, i64 V_r, i64 begin, const float* row_max,
                   float* sum_exp, float* target_logit) {
  USP_LAUNCH(static_cast<unsigned>(N), kRowThreads, shard_sum_exp_kernel, logits, targets, V_r, begin, row_max, sum_exp,
             target_logit);
}
void shard_cross_entropy_backward(const float* logits, const std::int32_t* targets, i64 N, i64 V_r, i64 begin,
                                  const float* lse, float k, float* dlogits) {
  USP_LAUNCH(static_cast<unsigned>(N), kRowThreads, shard_cross_entropy_backward_kernel, logits, targets, V_r, begin,
             lse, k, dlogits);
}
void attention_block_forward(const cuda_body::AttentionBlock& a, const float* q, const float* k, const float* v,
                             float* scratch, float* out, float* lse) {
  USP_LAUNCH(static_cast<unsigned>(a.B * a.H * a.Tq), kRowThreads, attention_block_forward_kernel, a, q, k, v, scratch,
             out, lse);
}
void attention_block_backward(const cuda_body::AttentionBlock& a, const float* dout, const float* dlse,
                              const float* q, const float* k, const float* v, const float* out, const float* lse,
                              float* P, float* dS, float* dq, float* dk, float* dv) {
  // Rows first (P, dS and dq), then the columns read P and dS (the same stream orders them).
  USP_LAUNCH(static_cast<unsigned>(a.B * a.H * a.Tq), kRowThreads, attention_block_backward_rows_kernel, a, dout,
             dlse, q, k, v, out, lse, P, dS, dq);
  USP_LAUNCH(static_cast<unsigned>(a.B * a.Tk * a.G), kRowThreads, attention_block_backward_columns_kernel, a, q, dout,
             P, dS, dk, dv);
}
void causal_softmax_rows(float* p, i64 rows, i64 T, i64 r0) {
  USP_LAUNCH(static_cast<unsigned>(rows), kRowThreads, causal_softmax_kernel, p, T, r0);
}
void causal_softmax_backward_rows(const float* p, float* ds, i64 rows, i64 T, i64 r0) {
  USP_LAUNCH(static_cast<unsigned>(rows), kRowThreads, causal_softmax_backward_kernel, p, ds, T, r0);
}

}  // namespace usp::ops::cuda_kernels
