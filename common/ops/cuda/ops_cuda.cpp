// The ops on CUDA tensors (see ops_cuda.hpp): the CPU ops' structure with device pointers —
// FloatIn / FloatOut widen and round exactly as on the CPU, detail::device_sgemm stands where the
// CPU ops call detail::sgemm, and the loops become the kernels of op_kernels.hpp.
#include "common/ops/cuda/ops_cuda.hpp"

#include <cmath>
#include <vector>

#include "common/cuda_support.hpp"
#include "common/ops/cuda/device_gemm.hpp"
#include "common/ops/cuda/op_kernels.hpp"
#include "common/ops/float_args.hpp"

namespace usp::ops::cuda_path {

using namespace detail;
namespace k = cuda_kernels;

namespace {

// Operands that share a 16-bit dtype go to cuBLAS as they are (tensor cores, fp32 accumulation,
// one rounding into the output's dtype); mixed dtypes are widened to fp32 first, as on the CPU.
bool narrow_pair(const Tensor& a, const Tensor& b) { return a.dtype() == b.dtype() && a.dtype() != DType::f32; }

}  // namespace

void matmul_forward(const Tensor& x, const Tensor& w, Tensor& y, std::int64_t n, std::int64_t out, std::int64_t in) {
  if (narrow_pair(x, w)) {
    device_gemm(false, true, n, out, in, 1.0f, x.dtype(), x.raw(), in, w.raw(), in, 0.0f, y.dtype(), y.raw(), out);
    return;
  }
  FloatIn xf(x), wf(w);
  FloatOut yf(y, false);
  device_sgemm(false, true, n, out, in, 1.0f, xf.data(), in, wf.data(), in, 0.0f, yf.data(), out);
  yf.store();
}

void matmul_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw, bool accumulate_dx,
                     std::int64_t n, std::int64_t out, std::int64_t in) {
  if (dx.defined()) {
    const float beta = accumulate_dx ? 1.0f : 0.0f;
    if (narrow_pair(dy, w)) {
      device_gemm(false, false, n, in, out, 1.0f, dy.dtype(), dy.raw(), out, w.raw(), in, beta, dx.dtype(), dx.raw(),
                  in);
    } else {
      FloatIn dyf(dy), wf(w);
      FloatOut dxf(dx, accumulate_dx);
      device_sgemm(false, false, n, in, out, 1.0f, dyf.data(), out, wf.data(), in, beta, dxf.data(), in);
      dxf.store();
    }
  }
  if (dw.defined()) {
    if (narrow_pair(dy, x)) {
      device_gemm(true, false, out, in, n, 1.0f, dy.dtype(), dy.raw(), out, x.raw(), in, 1.0f, dw.dtype(), dw.raw(),
                  in);
    } else {
      FloatIn dyf(dy), xf(x);
      FloatOut dwf(dw, true);
      device_sgemm(true, false, out, in, n, 1.0f, dyf.data(), out, xf.data(), in, 1.0f, dwf.data(), in);
      dwf.store();
    }
  }
}

void embedding_forward(const Tensor& tokens, const Tensor& table, Tensor& out) {
  FloatIn tf(table);
  FloatOut of(out, false);
  k::embedding_forward(tokens.data<std::int32_t>(), tf.data(), tokens.numel(), table.dim(1), of.data());
  of.store();
}

void embedding_backward(const Tensor& tokens, const Tensor& dout, Tensor& dtable) {
  FloatIn df(dout);
  FloatOut tf(dtable, true);
  k::embedding_backward(tokens.data<std::int32_t>(), df.data(), tokens.numel(), dtable.dim(1), tf.data());
  tf.store();
}

void rmsnorm_forward(const Tensor& x, const Tensor& w, Tensor& y, Tensor& rstd, float eps) {
  const std::int64_t c = w.numel();
  FloatIn xf(x), wf(w);
  FloatOut yf(y, false);
  k::rmsnorm_forward(xf.data(), wf.data(), eps, x.numel() / c, c, yf.data(), rstd.data<float>());
  yf.store();
}

void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx_acc,
                      Tensor& dw) {
  const std::int64_t c = w.numel();
  FloatIn dyf(dy), xf(x), wf(w);
  FloatOut dxf(dx_acc, true), dwf(dw, true);
  k::rmsnorm_backward(dyf.data(), xf.data(), wf.data(), rstd.data<float>(), x.numel() / c, c, dxf.data(),
                      dwf.data());
  dxf.store();
  dwf.store();
}

void rope(Tensor& x, const Tensor& cos_sin, bool inverse) {
  const Tensor table = cos_sin.to(x.device(), MemCategory::Temporary);
  FloatOut xf(x, true);
  k::rope(xf.data(), table.data<float>(), x.dim(0), x.dim(1), x.dim(2), x.dim(3), inverse ? -1.0f : 1.0f);
  xf.store();
}

namespace {

struct Heads {
  std::int64_t b, t, h, g, d;
};

// P [T, T] of one head = causal softmax(s · q kᵀ), q and k strided heads.
void head_probs(const Heads& a, const float* q, const float* k_, float s, float* p) {
  device_sgemm(false, true, a.t, a.t, a.d, s, q, a.h * a.d, k_, a.g * a.d, 0.0f, p, a.t);
  k::causal_softmax_rows(p, a.t, a.t, 0);
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k_, const Tensor& v, Tensor& out, Tensor& probs) {
  const Heads a{q.dim(0), q.dim(1), q.dim(2), k_.dim(2), q.dim(3)};
  const std::int64_t T = a.t, D = a.d, HD = a.h * D, GD = a.g * D;
  const float s = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const bool probs_f32 = probs.defined() && probs.dtype() == DType::f32;
  FloatIn qf(q), kf(k_), vf(v);
  FloatOut of(out, false);
  Tensor scratch;
  if (!probs_f32) scratch = Tensor::empty({T, T}, DType::f32, MemCategory::Temporary, q.device());
  for (std::int64_t bi = 0; bi < a.b; ++bi)
    for (std::int64_t hq = 0; hq < a.h; ++hq) {
      const std::int64_t hk = hq / (a.h / a.g), head = (bi * a.h + hq) * T * T;
      float* p = probs_f32 ? probs.data<float>() + head : scratch.data<float>();
      head_probs(a, qf.data() + bi * T * HD + hq * D, kf.data() + bi * T * GD + hk * D, s, p);
      device_sgemm(false, false, T, D, T, 1.0f, p, T, vf.data() + bi * T * GD + hk * D, GD, 0.0f,
                   of.data() + bi * T * HD + hq * D, HD);
      if (probs.defined() && !probs_f32)
        k::narrow(p, probs.dtype(), static_cast<std::uint16_t*>(probs.raw()) + head, T * T);
    }
  of.store();
}

void attention_forward_from_probs(const Tensor& probs, const Tensor& v, Tensor& out) {
  const std::int64_t B = probs.dim(0), H = probs.dim(1), T = probs.dim(2), G = v.dim(2), D = v.dim(3);
  FloatIn vf(v);
  FloatOut of(out, false);
  for (std::int64_t bi = 0; bi < B; ++bi)
    for (std::int64_t hq = 0; hq < H; ++hq)
      device_sgemm(false, false, T, D, T, 1.0f, probs.data<float>() + (bi * H + hq) * T * T, T,
                   vf.data() + bi * T * G * D + (hq / (H / G)) * D, G * D, 0.0f, of.data() + bi * T * H * D + hq * D,
                   H * D);
  of.store();
}

void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k_, const Tensor& v, const Tensor& probs,
                        Tensor& dq, Tensor& dk, Tensor& dv) {
  const Heads a{q.dim(0), q.dim(1), q.dim(2), k_.dim(2), q.dim(3)};
  const std::int64_t T = a.t, D = a.d, HD = a.h * D, GD = a.g * D;
  const float s = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const bool probs_f32 = probs.defined() && probs.dtype() == DType::f32;
  FloatIn dof(dout), qf(q), kf(k_), vf(v);
  FloatOut dqf(dq, false), dkf(dk, false), dvf(dv, false);
  // dk and dv sum over the query heads of their group.
  cuda::zero(dkf.data(), static_cast<std::size_t>(dk.numel()) * sizeof(float));
  cuda::zero(dvf.data(), static_cast<std::size_t>(dv.numel()) * sizeof(float));
  // [2, T, T]: one head's dP (turned into dS in place) and, unless an f32 probs is given, its P.
  Tensor scratch = Tensor::empty({probs_f32 ? 1 : 2, T, T}, DType::f32, MemCategory::Temporary, q.device());
  float* ds = scratch.data<float>();
  float* p_scratch = probs_f32 ? nullptr : ds + T * T;
  for (std::int64_t bi = 0; bi < a.b; ++bi)
    for (std::int64_t hq = 0; hq < a.h; ++hq) {
      const std::int64_t hk = hq / (a.h / a.g), head = (bi * a.h + hq) * T * T;
      const float* qp = qf.data() + bi * T * HD + hq * D;
      const float* kp = kf.data() + bi * T * GD + hk * D;
      const float* vp = vf.data() + bi * T * GD + hk * D;
      const float* dop = dof.data() + bi * T * HD + hq * D;
      const float* p = p_scratch;
      if (probs_f32) {
        p = probs.data<float>() + head;
      } else if (probs.defined()) {
        k::widen(probs.dtype(), static_cast<const std::uint16_t*>(probs.raw()) + head, p_scratch, T * T);
      } else {
        head_probs(a, qp, kp, s, p_scratch);
        // Rounded to q's dtype as a saved probs tensor would be (the CPU op does the same).
        if (q.dtype() != DType::f32) {
          k::narrow(p_scratch, q.dtype(), ds, T * T);
          k::widen(q.dtype(), ds, p_scratch, T * T);
        }
      }
      device_sgemm(false, true, T, T, D, 1.0f, dop, HD, vp, GD, 0.0f, ds, T);  // dP = dout · vᵀ
      k::causal_softmax_backward_rows(p, ds, T, T, 0);                         // dS
      device_sgemm(false, false, T, D, T, s, ds, T, kp, GD, 0.0f, dqf.data() + bi * T * HD + hq * D, HD);
      device_sgemm(true, false, T, D, T, s, ds, T, qp, HD, 1.0f, dkf.data() + bi * T * GD + hk * D, GD);
      device_sgemm(true, false, T, D, T, 1.0f, p, T, dop, HD, 1.0f, dvf.data() + bi * T * GD + hk * D, GD);
    }
  dqf.store();
  dkf.store();
  dvf.store();
}

void swiglu_forward(const Tensor& g, const Tensor& u, Tensor& z) {
  FloatIn gf(g), uf(u);
  FloatOut zf(z, false);
  k::swiglu_forward(gf.data(), uf.data(), zf.data(), z.numel());
  zf.store();
}

void swiglu_backward(const Tensor& dz, const Tensor& g, const Tensor& u, Tensor& dg, Tensor& du) {
  FloatIn dzf(dz), gf(g), uf(u);
  FloatOut dgf(dg, false), duf(du, false);
  k::swiglu_backward(dzf.data(), gf.data(), uf.data(), dgf.data(), duf.data(), dz.numel());
  dgf.store();
  duf.store();
}

void add_inplace(Tensor& y, const Tensor& x) {
  FloatIn xf(x);
  FloatOut yf(y, true);
  k::add(xf.data(), yf.data(), y.numel());
  yf.store();
}

void scale_inplace(Tensor& y, float s) {
  FloatOut yf(y, true);
  k::scale(s, yf.data(), y.numel());
  yf.store();
}

double cross_entropy_forward(const Tensor& logits, const Tensor& targets) {
  const std::int64_t n = logits.dim(0), v = logits.dim(1);
  FloatIn lf(logits);
  Tensor rows = Tensor::empty({n}, DType::f32, MemCategory::Temporary, logits.device());
  k::cross_entropy_forward(lf.data(), targets.data<std::int32_t>(), n, v, rows.data<float>());
  double total = 0.0;
  for (float l : rows.to_floats()) total += static_cast<double>(l);
  return total / static_cast<double>(n);
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, Tensor& dlogits, float scale) {
  const std::int64_t n = logits.dim(0), v = logits.dim(1);
  FloatIn lf(logits);
  FloatOut df(dlogits, false);
  k::cross_entropy_backward(lf.data(), targets.data<std::int32_t>(), n, v, scale / static_cast<float>(n), df.data());
  df.store();
}

namespace {

cuda_body::AttentionBlock block_of(const Tensor& q, const Tensor& k, const Tensor& q_pos, const Tensor& k_pos) {
  const std::int64_t D = q.dim(3);
  return {q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), D,
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(D))), q_pos.data<std::int32_t>(),
          k_pos.data<std::int32_t>()};
}

}  // namespace

void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_pos,
                             const Tensor& k_pos, Tensor& out, Tensor& lse) {
  const cuda_body::AttentionBlock a = block_of(q, k, q_pos, k_pos);
  FloatIn qf(q), kf(k), vf(v);
  FloatOut of(out, false);
  Tensor scratch = Tensor::empty({a.B * a.H * a.Tq, a.Tk}, DType::f32, MemCategory::Temporary, q.device());
  k::attention_block_forward(a, qf.data(), kf.data(), vf.data(), scratch.data<float>(), of.data(), lse.data<float>());
  of.store();
}

void attention_block_backward(const Tensor& dout, const Tensor& dlse, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& q_pos, const Tensor& k_pos, const Tensor& out,
                              const Tensor& lse, Tensor& dq, Tensor& dk, Tensor& dv) {
  const cuda_body::AttentionBlock a = block_of(q, k, q_pos, k_pos);
  FloatIn qf(q), kf(k), vf(v), of(out), dof(dout);
  FloatOut dqf(dq, true), dkf(dk, true), dvf(dv, true);
  Tensor P = Tensor::empty({a.B * a.H * a.Tq, a.Tk}, DType::f32, MemCategory::Temporary, q.device());
  Tensor dS = Tensor::empty(P.shape(), DType::f32, MemCategory::Temporary, q.device());
  k::attention_block_backward(a, dof.data(), dlse.defined() ? dlse.data<float>() : nullptr, qf.data(), kf.data(),
                              vf.data(), of.data(), lse.data<float>(), P.data<float>(), dS.data<float>(), dqf.data(),
                              dkf.data(), dvf.data());
  dqf.store();
  dkf.store();
  dvf.store();
}

void vocab_shard_row_max(const Tensor& logits, Tensor& row_max) {
  FloatIn lf(logits);
  k::shard_row_max(lf.data(), logits.dim(0), logits.dim(1), row_max.data<float>());
}

void vocab_shard_sum_exp(const Tensor& logits, const Tensor& targets, std::int64_t begin, const Tensor& row_max,
                         Tensor& sum_exp, Tensor& target_logit) {
  FloatIn lf(logits);
  k::shard_sum_exp(lf.data(), targets.data<std::int32_t>(), logits.dim(0), logits.dim(1), begin,
                   row_max.data<float>(), sum_exp.data<float>(), target_logit.data<float>());
}

void vocab_shard_cross_entropy_backward(const Tensor& logits, const Tensor& targets, std::int64_t begin,
                                        const Tensor& lse, Tensor& dlogits, float scale) {
  const std::int64_t n = logits.dim(0);
  FloatIn lf(logits);
  FloatOut df(dlogits, false);
  k::shard_cross_entropy_backward(lf.data(), targets.data<std::int32_t>(), n, logits.dim(1), begin,
                                  lse.data<float>(), scale / static_cast<float>(n), df.data());
  df.store();
}

}  // namespace usp::ops::cuda_path
