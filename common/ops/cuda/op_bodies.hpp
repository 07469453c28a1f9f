// The CUDA ops' per-thread work, as host-device functions (no CUDA in this header). Each kernel of
// common/ops/cuda/op_kernels.cu is a thin shell that computes its thread's index and calls one of
// these; tests/ops/test_op_bodies.cpp runs the same functions over the whole grid on the CPU and
// compares with the CPU ops, so CI without a GPU checks the kernels' indexing and masking.
//
// Three shapes of work:
//   element   one thread per output element (i < n); nothing shared
//   column    one thread per column c of a [rows, C] sum over rows (dw of RMSNorm, the embedding's
//             dtable): the rows are added in order 0, 1, ... by that one thread — deterministic,
//             no atomics, the same order as the CPU op
//   row       one block per row; thread t of `threads` takes the columns t, t + threads, ...
//             A row's reduction is three steps: each thread's partial (a *_partial body), the
//             block's reduction of the partials (block_sum / block_max in the kernels; a loop
//             over t in the emulation), and each thread's writes (a *_write body) with the result.
//
// All float data is fp32 (bf16 / f16 tensors are widened first, as on the CPU). Shapes use the
// letters of ops.hpp: N rows, C hidden, F ffn, V vocab, B batch, T sequence, H heads, D head dim.
#pragma once
#include <cmath>
#include <cstdint>

#include "common/hostdevice.hpp"

namespace usp::ops::cuda_body {

using i64 = std::int64_t;

USP_HD float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// ---- element ----------------------------------------------------------------------------------
// y[i] += x[i]
USP_HD void add(i64 i, const float* x, float* y) { y[i] += x[i]; }
// y[i] *= s
USP_HD void scale(i64 i, float s, float* y) { y[i] *= s; }

// SwiGLU: z = silu(g) · u; backward dg = dz · u · σ(g)(1 + g(1 - σ(g))), du = dz · silu(g).
USP_HD void swiglu_forward(i64 i, const float* g, const float* u, float* z) {
  z[i] = g[i] * sigmoid(g[i]) * u[i];
}
USP_HD void swiglu_backward(i64 i, const float* dz, const float* g, const float* u, float* dg, float* du) {
  const float s = sigmoid(g[i]);
  dg[i] = dz[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
  du[i] = dz[i] * g[i] * s;
}

// Embedding forward: element i of out [N, C] is table[tokens[i / C], i % C].
USP_HD void embedding_forward(i64 i, const std::int32_t* tokens, const float* table, i64 C, float* out) {
  const i64 n = i / C, c = i % C;
  out[i] = table[static_cast<i64>(tokens[n]) * C + c];
}

// RoPE, rotate-half, one thread per pair (x[i], x[i + D/2]): pair index p over B·T·H·(D/2).
// cos_sin [2, T, D/2]: the angles' cosines then sines (computed on the host in double, as the
// CPU op does); sign -1 applies the transposed rotation (backward).
USP_HD void rope_pair(i64 p, i64 T, i64 H, i64 D, const float* cos_sin, float sign, float* x) {
  const i64 half = D / 2;
  const i64 i = p % half;
  const i64 row = p / half;              // (b·T + t)·H + h
  const i64 t = (row / H) % T;
  float* lo = x + row * D;
  const float c = cos_sin[t * half + i], s = sign * cos_sin[T * half + t * half + i];
  const float a = lo[i], b = lo[i + half];
  lo[i] = a * c - b * s;
  lo[i + half] = b * c + a * s;
}

// AdamW's bias-corrected step on one parameter (the weight decay, w *= 1 - lr·wd, is applied
// before it to the decayed ranges only, by `scale`, as the CPU optimizer does).
struct AdamWStep {
  float beta1, beta2, eps;
  float step_size;  // lr / (1 - beta1^t)
  float bc2_sqrt;   // sqrt(1 - beta2^t)
};
// g: this parameter's gradient, already widened to fp32.
USP_HD void adamw(i64 i, const AdamWStep& s, float g, float* w, float* m, float* v) {
  m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * g;
  v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * g * g;
  const float denom = sqrtf(v[i]) / s.bc2_sqrt + s.eps;
  w[i] -= s.step_size * m[i] / denom;
}

// ---- column -----------------------------------------------------------------------------------
// Embedding backward: dtable[tokens[n], c] += dout[n, c] for n = 0..N-1, by column c's thread.
USP_HD void embedding_backward_column(i64 c, const std::int32_t* tokens, const float* dout, i64 N, i64 C,
                                      float* dtable) {
  for (i64 n = 0; n < N; ++n) dtable[static_cast<i64>(tokens[n]) * C + c] += dout[n * C + c];
}

// RMSNorm's weight gradient: dw[c] += Σ_n dy[n, c] · x[n, c] · rstd[n], by kDwLanes threads per
// column: lane j sums rows j, j + kDwLanes, j + 2·kDwLanes, ...; then the lanes' partials are added
// in the order j = 0, 1, ... and once onto dw[c]. (One thread per column left a [8192, 768]
// gradient to 768 threads: 1.8 ms, 15 % of a training step on an H100.)
constexpr int kDwLanes = 32;
USP_HD float rmsnorm_dw_partial(i64 c, int lane, const float* dy, const float* x, const float* rstd, i64 N, i64 C) {
  float acc = 0.0f;
  for (i64 n = lane; n < N; n += kDwLanes) acc += dy[n * C + c] * x[n * C + c] * rstd[n];
  return acc;
}

// ---- row --------------------------------------------------------------------------------------
// RMSNorm forward of row n: partial Σ x², then r = 1/sqrt(Σ/C + eps), y = x · r · w.
USP_HD float rmsnorm_partial(i64 n, int t, int threads, const float* x, i64 C) {
  float acc = 0.0f;
  for (i64 c = t; c < C; c += threads) acc += x[n * C + c] * x[n * C + c];
  return acc;
}
USP_HD float rmsnorm_rstd(float sum_sq, i64 C, float eps) {
  return static_cast<float>(1.0 / sqrt(static_cast<double>(sum_sq / static_cast<float>(C)) + eps));
}
USP_HD void rmsnorm_write(i64 n, int t, int threads, const float* x, const float* w, float r, i64 C, float* y) {
  for (i64 c = t; c < C; c += threads) y[n * C + c] = x[n * C + c] * r * w[c];
}

// RMSNorm backward of row n (dx only; dw is rmsnorm_dw_partial): partial Σ dy·w·x, then
// dx += r·dy·w - x·r³·Σ/C.
USP_HD float rmsnorm_backward_partial(i64 n, int t, int threads, const float* dy, const float* x, const float* w,
                                      i64 C) {
  float acc = 0.0f;
  for (i64 c = t; c < C; c += threads) acc += dy[n * C + c] * w[c] * x[n * C + c];
  return acc;
}
USP_HD void rmsnorm_backward_write(i64 n, int t, int threads, const float* dy, const float* x, const float* w,
                                   float r, float sum_gx, i64 C, float* dx) {
  const float k = r * r * r * sum_gx / static_cast<float>(C);
  for (i64 c = t; c < C; c += threads) dx[n * C + c] += r * dy[n * C + c] * w[c] - k * x[n * C + c];
}

// Softmax over the first `len` entries of a row of x (row stride ld); entries len.. of the row
// are written 0 (the causal mask). Partial max, partial Σ e^(x - max), then the writes with
// f = k / Σ: y[j] = f · e^(x[j] - max).
USP_HD float row_max_partial(const float* x, i64 len, int t, int threads) {
  float m = -INFINITY;
  for (i64 j = t; j < len; j += threads) m = fmaxf(m, x[j]);
  return m;
}
USP_HD float row_sum_exp_partial(const float* x, i64 len, float m, int t, int threads) {
  float acc = 0.0f;
  for (i64 j = t; j < len; j += threads) acc += expf(x[j] - m);
  return acc;
}
USP_HD void row_softmax_write(const float* x, i64 len, i64 width, float m, float f, int t, int threads, float* y) {
  for (i64 j = t; j < width; j += threads) y[j] = j < len ? f * expf(x[j] - m) : 0.0f;
}

// Cross-entropy of row n of logits [N, V] with the row's max m and Σ e^(x - m):
//   loss_n = m + log Σ - x[target]                 (forward; one thread writes it)
//   d[j] = k · (e^(x[j] - m) / Σ - [j = target])   (backward; k = scale / N)
USP_HD float cross_entropy_row_loss(float m, float sum, float x_target) {
  return static_cast<float>(static_cast<double>(m) + log(static_cast<double>(sum)) - static_cast<double>(x_target));
}
USP_HD void cross_entropy_backward_write(const float* x, i64 V, std::int32_t target, float m, float sum, float k,
                                         int t, int threads, float* d) {
  const float f = k / sum;
  for (i64 j = t; j < V; j += threads) d[j] = f * expf(x[j] - m) - (j == target ? k : 0.0f);
}

// The same loss over a vocabulary split by columns (chapter 06's vocabulary-parallel head on a
// GPU): row n of logits [N, V_r] holds columns [begin, begin + V_r) of the full row. Each rank
// takes its row max (row_max_partial), the group's max m comes back by all-reduce, then each rank
// its Σ e^(x - m) (row_sum_exp_partial) and the target's logit, 0 when another rank holds that
// column (one thread writes it); both are summed over the group. The backward is
// cross_entropy_backward_write with m = lse, sum = 1 and the target made local (target - begin:
// outside [0, V_r) it matches no column).
USP_HD float shard_target_logit(const float* x, i64 V_r, std::int32_t target, i64 begin) {
  const i64 j = static_cast<i64>(target) - begin;
  return j >= 0 && j < V_r ? x[j] : 0.0f;
}

// Softmax backward of one attention row of `width` entries, the first len unmasked: partial
// Σ d·p over them, then d <- p · (d - Σ) in place, and 0 for the masked entries (d = dout·vᵀ is
// computed over the whole row).
USP_HD float row_dot_partial(const float* a, const float* b, i64 len, int t, int threads) {
  float acc = 0.0f;
  for (i64 j = t; j < len; j += threads) acc += a[j] * b[j];
  return acc;
}
USP_HD void softmax_backward_write(const float* p, i64 len, i64 width, float dot, int t, int threads, float* d) {
  for (i64 j = t; j < width; j += threads) d[j] = j < len ? p[j] * (d[j] - dot) : 0.0f;
}

// ---- attention over one block of keys at given positions (ops::attention_block_*) ------------
// q, out, dout [B, Tq, H, D]; k, v [B, Tk, G, D]; lse [B, H, Tq]. A row r = (b·H + h)·Tq + i is
// one query (lse's layout); a column c = (b·Tk + j)·G + g one key of one kv head (k's layout,
// c·D its first element). Query head h reads kv head h / (H/G). Key j is visible to query i when
// k_pos[j] <= q_pos[i]. `s`, `p`, `ds` are the row's [Tk] scratch (a [B·H·Tq, Tk] buffer).
struct AttentionBlock {
  i64 B, Tq, Tk, H, G, D;
  float scale;                // 1/√D
  const std::int32_t* q_pos;  // [Tq]
  const std::int32_t* k_pos;  // [Tk]
};

USP_HD i64 block_q_offset(const AttentionBlock& a, i64 r) {
  const i64 i = r % a.Tq, h = (r / a.Tq) % a.H, b = r / (a.Tq * a.H);
  return ((b * a.Tq + i) * a.H + h) * a.D;
}
USP_HD i64 block_kv_offset(const AttentionBlock& a, i64 r, i64 j) {
  const i64 h = (r / a.Tq) % a.H, b = r / (a.Tq * a.H);
  return ((b * a.Tk + j) * a.G + h / (a.H / a.G)) * a.D;
}
// s[i, j] = q_i · k_j / √D, or -inf when key j is not visible to row r's query.
USP_HD float block_score(const AttentionBlock& a, const float* q, const float* k, i64 r, i64 j) {
  if (a.k_pos[j] > a.q_pos[r % a.Tq]) return -INFINITY;
  const float* qi = q + block_q_offset(a, r);
  const float* kj = k + block_kv_offset(a, r, j);
  float acc = 0.0f;
  for (i64 e = 0; e < a.D; ++e) acc += qi[e] * kj[e];
  return acc * a.scale;
}

// Forward, a block per row: the scores and their partial max; then s <- e^(s - m) (0 where
// masked, and everywhere when nothing is visible: m = -inf) and its partial sum; then
// out[e] = inv_sum · Σ_j s[j]·v_j[e] (inv_sum 0 when nothing is visible: out = 0) and
// lse = m + log Σ (-inf when nothing is visible).
USP_HD float block_scores_partial(const AttentionBlock& a, const float* q, const float* k, i64 r, int t, int threads,
                                  float* s) {
  float m = -INFINITY;
  for (i64 j = t; j < a.Tk; j += threads) {
    s[j] = block_score(a, q, k, r, j);
    m = fmaxf(m, s[j]);
  }
  return m;
}
USP_HD float block_exp_partial(const AttentionBlock& a, float m, int t, int threads, float* s) {
  float sum = 0.0f;
  for (i64 j = t; j < a.Tk; j += threads) {
    s[j] = s[j] == -INFINITY ? 0.0f : expf(s[j] - m);
    sum += s[j];
  }
  return sum;
}
USP_HD float block_lse(float m, float sum) {
  return m == -INFINITY ? -INFINITY : static_cast<float>(static_cast<double>(m) + log(static_cast<double>(sum)));
}
USP_HD void block_out_write(const AttentionBlock& a, const float* v, const float* s, float inv_sum, i64 r, int t,
                            int threads, float* out) {
  float* o = out + block_q_offset(a, r);
  for (i64 e = t; e < a.D; e += threads) {
    float acc = 0.0f;
    for (i64 j = 0; j < a.Tk; ++j) acc += s[j] * v[block_kv_offset(a, r, j) + e];
    o[e] = acc * inv_sum;
  }
}

// Backward, a block per row: δ = rowsum(dout ∘ out) (partials over e); then for each key
// p = e^(s - lse) (0 where masked or nothing visible), dp = dout_i · v_j and
// ds = p·(dp - δ + dlse)/√D into the row's scratch, and dq_i += Σ_j ds[j]·k_j.
USP_HD float block_delta_partial(const AttentionBlock& a, const float* dout, const float* out, i64 r, int t,
                                 int threads) {
  const i64 o = block_q_offset(a, r);
  float acc = 0.0f;
  for (i64 e = t; e < a.D; e += threads) acc += dout[o + e] * out[o + e];
  return acc;
}
USP_HD void block_ds_row(const AttentionBlock& a, const float* q, const float* k, const float* v, const float* dout,
                         float lse, float delta, float dlse, i64 r, int t, int threads, float* p, float* ds) {
  const float* di = dout + block_q_offset(a, r);
  for (i64 j = t; j < a.Tk; j += threads) {
    const float s = block_score(a, q, k, r, j);
    const float pj = s == -INFINITY || lse == -INFINITY ? 0.0f : expf(s - lse);
    const float* vj = v + block_kv_offset(a, r, j);
    float dp = 0.0f;
    for (i64 e = 0; e < a.D; ++e) dp += di[e] * vj[e];
    p[j] = pj;
    ds[j] = pj * (dp - delta + dlse) * a.scale;
  }
}
USP_HD void block_dq_write(const AttentionBlock& a, const float* k, const float* ds, i64 r, int t, int threads,
                           float* dq) {
  float* d = dq + block_q_offset(a, r);
  for (i64 e = t; e < a.D; e += threads) {
    float acc = 0.0f;
    for (i64 j = 0; j < a.Tk; ++j) acc += ds[j] * k[block_kv_offset(a, r, j) + e];
    d[e] += acc;
  }
}
// Then a block per column (key j of kv head g): over the query heads of g's group and every query
// i (P and dS: the rows' scratch, [B·H·Tq, Tk]), dv_j += Σ p·dout_i and dk_j += Σ ds·q_i. One
// block owns each column: no atomics, a fixed order.
USP_HD void block_dkv_column(const AttentionBlock& a, const float* q, const float* dout, const float* P,
                             const float* dS, i64 c, int t, int threads, float* dk, float* dv) {
  const i64 g = c % a.G, j = (c / a.G) % a.Tk, b = c / (a.G * a.Tk), group = a.H / a.G;
  for (i64 e = t; e < a.D; e += threads) {
    float acc_k = 0.0f, acc_v = 0.0f;
    for (i64 h = g * group; h < (g + 1) * group; ++h)
      for (i64 i = 0; i < a.Tq; ++i) {
        const i64 r = (b * a.H + h) * a.Tq + i, o = block_q_offset(a, r);
        acc_v += P[r * a.Tk + j] * dout[o + e];
        acc_k += dS[r * a.Tk + j] * q[o + e];
      }
    dv[c * a.D + e] += acc_v;
    dk[c * a.D + e] += acc_k;
  }
}

}  // namespace usp::ops::cuda_body
