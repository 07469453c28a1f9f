#include "chapters/12_flash_attention/flash_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "chapters/12_flash_attention/flash_attention_cuda.hpp"
#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/error.hpp"
#include "common/ops/float_args.hpp"
#include "common/ops/gemm.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch12 {

namespace {

struct Dims {
  std::int64_t b, t, h, g, d;
};

Dims check(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, FlashTiles tiles) {
  const auto shape = [](const Tensor& x) { return shape_str(x.shape()); };
  if (q.ndim() != 4 || k.ndim() != 4 || k.shape() != v.shape() || k.dim(0) != q.dim(0) || k.dim(1) != q.dim(1) ||
      k.dim(3) != q.dim(3) || k.dim(2) < 1 || q.dim(2) % k.dim(2) != 0)
    throw UsageError(std::string(op) + ": q " + shape(q) + ", k " + shape(k) + ", v " + shape(v) +
                     " are not [B, T, H, D] and [B, T, G, D] with G dividing H");
  if (tiles.q_rows < 1 || tiles.k_cols < 1)
    throw UsageError(std::string(op) + ": tiles must have at least one row and one column");
  return {q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3)};
}

// Rows [r0, r0 + n) of head `head` of x [B, T, heads, D] (batch bi) into tile [n, D], or back.
void load(const float* x, const Dims& m, std::int64_t heads, std::int64_t bi, std::int64_t head, std::int64_t r0,
          std::int64_t n, float* tile) {
  for (std::int64_t r = 0; r < n; ++r)
    std::copy_n(x + ((bi * m.t + r0 + r) * heads + head) * m.d, m.d, tile + r * m.d);
}
void store(const float* tile, const Dims& m, std::int64_t heads, std::int64_t bi, std::int64_t head, std::int64_t r0,
           std::int64_t n, float* x) {
  for (std::int64_t r = 0; r < n; ++r)
    std::copy_n(tile + r * m.d, m.d, x + ((bi * m.t + r0 + r) * heads + head) * m.d);
}

// s [nq, nk] = q_tile · k_tileᵀ · scale, -inf where causal masks key k0 + j for query q0 + i.
void tile_scores(const float* q, const float* k, std::int64_t nq, std::int64_t nk, std::int64_t d, float scale,
                 bool causal, std::int64_t q0, std::int64_t k0, float* s) {
  ops::detail::sgemm(false, true, nq, nk, d, scale, q, d, k, d, 0.0f, s, nk);
  if (causal)
    for (std::int64_t i = 0; i < nq; ++i)
      for (std::int64_t j = std::max<std::int64_t>(0, q0 + i - k0 + 1); j < nk; ++j)
        s[i * nk + j] = -std::numeric_limits<float>::infinity();
}

Tensor scratch(std::int64_t n) { return Tensor::empty({n}, DType::f32, MemCategory::Temporary); }

}  // namespace

void flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, FlashTiles tiles,
                             Tensor& out, Tensor& lse) {
  const Dims m = check("flash_attention_forward", q, k, v, tiles);
  ops::detail::check_shape("flash_attention_forward", "out", out, q.shape());
  USP_CHECK(lse.dtype() == DType::f32, "flash_attention_forward: lse must be f32");
  ops::detail::check_shape("flash_attention_forward", "lse", lse, {m.b, m.h, m.t});
  if (ops::detail::on_cuda("flash_attention_forward", {&q, &k, &v, &out, &lse}))
    return flash_attention_forward_cuda(q, k, v, causal, out, lse);
  const std::int64_t br = tiles.q_rows, bc = tiles.k_cols;
  const ops::detail::FloatIn qf(q), kf(k), vf(v);
  ops::detail::FloatOut of(out, false);
  float* lse_out = lse.data<float>();
  Tensor qt = scratch(br * m.d), kt = scratch(bc * m.d), vt = scratch(bc * m.d), st = scratch(br * bc);
  Tensor mt = scratch(br), lt = scratch(br), acct = scratch(br * m.d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(m.d));
  for (std::int64_t bi = 0; bi < m.b; ++bi)
    for (std::int64_t hq = 0; hq < m.h; ++hq) {
      const std::int64_t hk = hq / (m.h / m.g);
      for (std::int64_t i0 = 0; i0 < m.t; i0 += br) {
        const std::int64_t nq = std::min(br, m.t - i0);
        load(qf.data(), m, m.h, bi, hq, i0, nq, qt.data<float>());
        float *mi = mt.data<float>(), *li = lt.data<float>(), *acc = acct.data<float>();
        std::fill_n(mi, nq, -std::numeric_limits<float>::infinity());
        std::fill_n(li, nq, 0.0f);
        std::fill_n(acc, nq * m.d, 0.0f);
        const std::int64_t k_end = causal ? std::min(m.t, i0 + nq) : m.t;  // keys past the diagonal: all masked
        for (std::int64_t j0 = 0; j0 < k_end; j0 += bc) {
          const std::int64_t nk = std::min(bc, m.t - j0);
          load(kf.data(), m, m.g, bi, hk, j0, nk, kt.data<float>());
          load(vf.data(), m, m.g, bi, hk, j0, nk, vt.data<float>());
          tile_scores(qt.data<float>(), kt.data<float>(), nq, nk, m.d, scale, causal, i0, j0, st.data<float>());
          online_softmax_update(st.data<float>(), vt.data<float>(), static_cast<int>(nq), static_cast<int>(nk),
                                static_cast<int>(m.d), mi, li, acc);
        }
        for (std::int64_t r = 0; r < nq; ++r) {
          for (std::int64_t e = 0; e < m.d; ++e) acc[r * m.d + e] /= li[r];
          lse_out[(bi * m.h + hq) * m.t + i0 + r] = mi[r] + std::log(li[r]);
        }
        store(acc, m, m.h, bi, hq, i0, nq, of.data());
      }
    }
  of.store();
  ops::add_flops(4 * m.b * m.h * m.t * m.t * m.d);  // q·kᵀ and p·v, counted dense as the other attentions
}

void flash_attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, bool causal, FlashTiles tiles, Tensor& dq,
                              Tensor& dk, Tensor& dv) {
  const Dims m = check("flash_attention_backward", q, k, v, tiles);
  using Expected = std::tuple<const char*, const Tensor*, Shape>;
  for (const auto& [name, t, want] : {Expected{"dout", &dout, q.shape()}, Expected{"out", &out, q.shape()},
                                      Expected{"dq", &dq, q.shape()}, Expected{"dk", &dk, k.shape()},
                                      Expected{"dv", &dv, k.shape()}, Expected{"lse", &lse, Shape{m.b, m.h, m.t}}})
    ops::detail::check_shape("flash_attention_backward", name, *t, want);
  USP_CHECK(lse.dtype() == DType::f32, "flash_attention_backward: lse must be f32");
  if (ops::detail::on_cuda("flash_attention_backward", {&dout, &q, &k, &v, &out, &lse, &dq, &dk, &dv}))
    return flash_attention_backward_cuda(dout, q, k, v, out, lse, causal, dq, dk, dv);
  const std::int64_t br = tiles.q_rows, bc = tiles.k_cols;
  const ops::detail::FloatIn qf(q), kf(k), vf(v), of(out), dof(dout);
  ops::detail::FloatOut dqf(dq, false), dkf(dk, false), dvf(dv, false);
  std::fill_n(dqf.data(), dq.numel(), 0.0f);
  std::fill_n(dkf.data(), dk.numel(), 0.0f);
  std::fill_n(dvf.data(), dv.numel(), 0.0f);
  const float* lse_in = lse.data<float>();
  Tensor qt = scratch(br * m.d), dot = scratch(br * m.d), ot = scratch(br * m.d), dqt = scratch(br * m.d);
  Tensor kt = scratch(bc * m.d), vt = scratch(bc * m.d), dkt = scratch(bc * m.d), dvt = scratch(bc * m.d);
  Tensor delta = scratch(br), dk_sum = scratch(bc * m.d), dv_sum = scratch(bc * m.d);
  Tensor pt = scratch(br * bc), dpt = scratch(br * bc);
  const float scale = 1.0f / std::sqrt(static_cast<float>(m.d));
  for (std::int64_t bi = 0; bi < m.b; ++bi)
    for (std::int64_t hq = 0; hq < m.h; ++hq) {
      const std::int64_t hk = hq / (m.h / m.g);
      for (std::int64_t j0 = 0; j0 < m.t; j0 += bc) {
        const std::int64_t nk = std::min(bc, m.t - j0);
        load(kf.data(), m, m.g, bi, hk, j0, nk, kt.data<float>());
        load(vf.data(), m, m.g, bi, hk, j0, nk, vt.data<float>());
        std::fill_n(dkt.data<float>(), nk * m.d, 0.0f);
        std::fill_n(dvt.data<float>(), nk * m.d, 0.0f);
        for (std::int64_t i0 = causal ? j0 / br * br : 0; i0 < m.t; i0 += br) {  // causal: tiles reaching j0
          const std::int64_t nq = std::min(br, m.t - i0);
          load(qf.data(), m, m.h, bi, hq, i0, nq, qt.data<float>());
          load(dof.data(), m, m.h, bi, hq, i0, nq, dot.data<float>());
          load(of.data(), m, m.h, bi, hq, i0, nq, ot.data<float>());
          load(dqf.data(), m, m.h, bi, hq, i0, nq, dqt.data<float>());
          for (std::int64_t r = 0; r < nq; ++r) {
            float sum = 0;
            for (std::int64_t e = 0; e < m.d; ++e) sum += dot.data<float>()[r * m.d + e] * ot.data<float>()[r * m.d + e];
            delta.data<float>()[r] = sum;
          }
          const TileBackwardIn in{qt.data<float>(), kt.data<float>(), vt.data<float>(), dot.data<float>(),
                                  lse_in + (bi * m.h + hq) * m.t + i0, delta.data<float>(), pt.data<float>(),
                                  dpt.data<float>(), static_cast<int>(nq), static_cast<int>(nk), static_cast<int>(m.d), scale, causal,
                                  i0, j0};
          tile_backward(in, {dqt.data<float>(), dkt.data<float>(), dvt.data<float>()});
          store(dqt.data<float>(), m, m.h, bi, hq, i0, nq, dqf.data());
        }
        // This head's share of the kv head's gradients (a GQA group's query heads add up).
        load(dkf.data(), m, m.g, bi, hk, j0, nk, dk_sum.data<float>());
        load(dvf.data(), m, m.g, bi, hk, j0, nk, dv_sum.data<float>());
        for (std::int64_t e = 0; e < nk * m.d; ++e) {
          dk_sum.data<float>()[e] += dkt.data<float>()[e];
          dv_sum.data<float>()[e] += dvt.data<float>()[e];
        }
        store(dk_sum.data<float>(), m, m.g, bi, hk, j0, nk, dkf.data());
        store(dv_sum.data<float>(), m, m.g, bi, hk, j0, nk, dvf.data());
      }
    }
  dqf.store();
  dkf.store();
  dvf.store();
  ops::add_flops(8 * m.b * m.h * m.t * m.t * m.d);  // s recomputed, dv, dp, dq, dk
}

}  // namespace usp::ch12
