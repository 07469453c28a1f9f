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
  Tensor qt = scratch(br * m.d), st = scratch(br * bc), mt = scratch(br), lt = scratch(br), ot = scratch(br * m.d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(m.d));
  for (std::int64_t bi = 0; bi < m.b; ++bi)
    for (std::int64_t hq = 0; hq < m.h; ++hq) {
      const std::int64_t hk = hq / (m.h / m.g);
      for (std::int64_t i0 = 0; i0 < m.t; i0 += br) {
        const std::int64_t nq = std::min(br, m.t - i0);
        load(qf.data(), m, m.h, bi, hq, i0, nq, qt.data<float>());
        // Keys and values are read in place: key j of this kv head is row j of a [T, d] matrix
        // whose rows are g·d floats apart (the kv heads of a token interleave).
        QueryTileIn in{qt.data<float>(),
                       kf.data() + (bi * m.t * m.g + hk) * m.d,
                       vf.data() + (bi * m.t * m.g + hk) * m.d,
                       st.data<float>(),
                       mt.data<float>(),
                       lt.data<float>(),
                       static_cast<int>(nq),
                       static_cast<int>(m.t),
                       static_cast<int>(bc),
                       static_cast<int>(m.d),
                       m.g * m.d,
                       scale,
                       causal,
                       i0,
                       0};
        flash_query_tile(in, ot.data<float>(), lse_out + (bi * m.h + hq) * m.t + i0);  // exercise 12.1
        store(ot.data<float>(), m, m.h, bi, hq, i0, nq, of.data());
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
  Tensor kt = scratch(bc * m.d), vt = scratch(bc * m.d), dkt = scratch(bc * m.d), dvt = scratch(bc * m.d);
  Tensor delta = scratch(br), pt = scratch(br * bc), dpt = scratch(br * bc);
  const float scale = 1.0f / std::sqrt(static_cast<float>(m.d));
  for (std::int64_t bi = 0; bi < m.b; ++bi)
    for (std::int64_t hq = 0; hq < m.h; ++hq) {
      const std::int64_t hk = hq / (m.h / m.g);
      // Query row i of this head is row i of a [T, d] matrix whose rows are h·d floats apart, in
      // q, out, dout and dq alike: read (and dq added to) in place.
      const std::int64_t rows_at = (bi * m.t * m.h + hq) * m.d;
      for (std::int64_t j0 = 0; j0 < m.t; j0 += bc) {
        const std::int64_t nk = std::min(bc, m.t - j0);
        load(kf.data(), m, m.g, bi, hk, j0, nk, kt.data<float>());
        load(vf.data(), m, m.g, bi, hk, j0, nk, vt.data<float>());
        const KeyTileBackwardIn in{kt.data<float>(),        vt.data<float>(),
                                   qf.data() + rows_at,     of.data() + rows_at,
                                   dof.data() + rows_at,    lse_in + (bi * m.h + hq) * m.t,
                                   pt.data<float>(),        dpt.data<float>(),
                                   delta.data<float>(),     static_cast<int>(nk),
                                   static_cast<int>(m.t),   static_cast<int>(br),
                                   static_cast<int>(m.d),   m.h * m.d,
                                   scale,                   causal,
                                   0,                       j0};
        key_tile_backward(in, {dqf.data() + rows_at, dkt.data<float>(), dvt.data<float>()});  // exercise 12.2
        // This head's share of the kv head's gradients (a GQA group's query heads add up).
        float* dk_rows = dkf.data() + (bi * m.t * m.g + hk) * m.d;
        float* dv_rows = dvf.data() + (bi * m.t * m.g + hk) * m.d;
        for (std::int64_t r = 0; r < nk; ++r)
          for (std::int64_t e = 0; e < m.d; ++e) {
            dk_rows[(j0 + r) * m.g * m.d + e] += dkt.data<float>()[r * m.d + e];
            dv_rows[(j0 + r) * m.g * m.d + e] += dvt.data<float>()[r * m.d + e];
          }
      }
    }
  dqf.store();
  dkf.store();
  dvf.store();
  ops::add_flops(8 * m.b * m.h * m.t * m.t * m.d);  // s recomputed, dv, dp, dq, dk
}

}  // namespace usp::ch12
