// One block of causal attention at given positions, with its log-sum-exp (see ops.hpp): the
// building block of attention over a sequence split across ranks (chapter 07: a rank's queries
// against a block of keys that lives elsewhere) and of tiled attention (chapter 12).
//   s[i, j]  = q_i · k_j / √D, for keys visible to the query: k_pos[j] <= q_pos[i]
//   lse[i]   = log Σ_visible exp(s[i, j])                  (-inf when none is visible)
//   out[i]   = Σ_visible exp(s[i, j] - lse[i]) · v_j        (0 when none is visible)
// backward, from the gradients of both outputs (dlse may be undefined: 0):
//   p = exp(s - lse), dv_j += Σ_i p[i, j]·dout_i, dp[i, j] = dout_i · v_j,
//   ds = p ∘ (dp - rowsum(dout ∘ out) + dlse),  dq_i += Σ_j ds[i, j]·k_j / √D,  dk_j += Σ_i ds[i, j]·q_i / √D
// Query head j reads kv head j / (H/G); dk and dv sum over the query heads of a group. Plain loops
// in fp32 over one (batch, head) at a time, scores in a [Tq, Tk] Temporary; on CUDA tensors (the
// positions on the device too) the kernels of ops/cuda (one block per query row, one per key). FLOPs counted as the
// dense products (2·Tq·Tk·D each): 2 forward, 4 backward (dp, dv, dq, dk) plus 1 (s recomputed).
#include <cmath>
#include <limits>
#include <string>

#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif

namespace usp::ops {

using namespace detail;

namespace {

struct BlockDims {
  std::int64_t b, tq, tk, h, g, d;
};

BlockDims check_block(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_pos,
                      const Tensor& k_pos) {
  check_float(op, "q", q);
  check_float(op, "k", k);
  check_float(op, "v", v);
  USP_CHECK(q.ndim() == 4 && k.ndim() == 4 && k.dim(0) == q.dim(0) && k.dim(3) == q.dim(3) && k.dim(2) > 0 &&
                q.dim(2) % k.dim(2) == 0,
            std::string("ops::") + op + ": q " + shape_str(q.shape()) + " and k " + shape_str(k.shape()) +
                " are not [B, Tq, H, D] and [B, Tk, G, D] with G dividing H");
  check_shape(op, "v", v, k.shape());
  check_i32(op, "q_pos", q_pos);
  check_i32(op, "k_pos", k_pos);
  check_numel(op, "q_pos", q_pos, q.dim(1));
  check_numel(op, "k_pos", k_pos, k.dim(1));
  return {q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), q.dim(3)};
}

// s [Tq, Tk] of query head hq of batch bi: scaled scores, -inf where the key is not visible.
void scores(const BlockDims& m, const float* q, const float* k, const std::int32_t* qp, const std::int32_t* kp,
            std::int64_t bi, std::int64_t hq, float* s) {
  const std::int64_t hk = hq / (m.h / m.g);
  const float scale = 1.0f / std::sqrt(static_cast<float>(m.d));
  for (std::int64_t i = 0; i < m.tq; ++i) {
    const float* qi = q + ((bi * m.tq + i) * m.h + hq) * m.d;
    for (std::int64_t j = 0; j < m.tk; ++j) {
      if (kp[j] > qp[i]) {
        s[i * m.tk + j] = -std::numeric_limits<float>::infinity();
        continue;
      }
      const float* kj = k + ((bi * m.tk + j) * m.g + hk) * m.d;
      float acc = 0.0f;
      for (std::int64_t e = 0; e < m.d; ++e) acc += qi[e] * kj[e];
      s[i * m.tk + j] = acc * scale;
    }
  }
}

}  // namespace

void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_pos,
                             const Tensor& k_pos, Tensor& out, Tensor& lse) {
  const char* op = "attention_block_forward";
  const BlockDims m = check_block(op, q, k, v, q_pos, k_pos);
  check_shape(op, "out", out, q.shape());
  USP_CHECK(lse.dtype() == DType::f32, std::string("ops::") + op + ": lse must be f32");
  check_shape(op, "lse", lse, {m.b, m.h, m.tq});
  add_flops(2 * 2 * m.b * m.h * m.tq * m.tk * m.d);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&q, &k, &v, &q_pos, &k_pos, &out, &lse});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::attention_block_forward(q, k, v, q_pos, k_pos, out, lse);
    return;
  }
#endif
  const FloatIn qf(q), kf(k), vf(v);
  FloatOut of(out, false);
  float* o = of.data();
  float* l = lse.data<float>();
  const std::int32_t *qp = q_pos.data<std::int32_t>(), *kp = k_pos.data<std::int32_t>();
  Tensor s_t = Tensor::empty({m.tq, m.tk}, DType::f32, MemCategory::Temporary);
  float* s = s_t.data<float>();
  for (std::int64_t bi = 0; bi < m.b; ++bi)
    for (std::int64_t hq = 0; hq < m.h; ++hq) {
      const std::int64_t hk = hq / (m.h / m.g);
      scores(m, qf.data(), kf.data(), qp, kp, bi, hq, s);
      for (std::int64_t i = 0; i < m.tq; ++i) {
        float* row = s + i * m.tk;
        float mx = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < m.tk; ++j) mx = std::max(mx, row[j]);
        float* oi = o + ((bi * m.tq + i) * m.h + hq) * m.d;
        float& li = l[(bi * m.h + hq) * m.tq + i];
        for (std::int64_t e = 0; e < m.d; ++e) oi[e] = 0.0f;
        if (mx == -std::numeric_limits<float>::infinity()) {  // no visible key in this block
          li = mx;
          continue;
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j < m.tk; ++j) {
          row[j] = row[j] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(row[j] - mx);
          sum += row[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (std::int64_t j = 0; j < m.tk; ++j) {
          if (row[j] == 0.0f) continue;
          const float p = row[j] * inv;
          const float* vj = vf.data() + ((bi * m.tk + j) * m.g + hk) * m.d;
          for (std::int64_t e = 0; e < m.d; ++e) oi[e] += p * vj[e];
        }
        li = mx + static_cast<float>(std::log(sum));
      }
    }
  of.store();
}

void attention_block_backward(const Tensor& dout, const Tensor& dlse, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& q_pos, const Tensor& k_pos, const Tensor& out,
                              const Tensor& lse, Tensor& dq, Tensor& dk, Tensor& dv) {
  const char* op = "attention_block_backward";
  const BlockDims m = check_block(op, q, k, v, q_pos, k_pos);
  check_shape(op, "dout", dout, q.shape());
  check_shape(op, "out", out, q.shape());
  check_shape(op, "lse", lse, {m.b, m.h, m.tq});
  if (dlse.defined()) check_shape(op, "dlse", dlse, {m.b, m.h, m.tq});
  check_shape(op, "dq", dq, q.shape());
  check_shape(op, "dk", dk, k.shape());
  check_shape(op, "dv", dv, k.shape());
  add_flops(5 * 2 * m.b * m.h * m.tq * m.tk * m.d);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&dout, &dlse, &q, &k, &v, &q_pos, &k_pos, &out, &lse, &dq, &dk, &dv});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::attention_block_backward(dout, dlse, q, k, v, q_pos, k_pos, out, lse, dq, dk, dv);
    return;
  }
#endif
  const FloatIn qf(q), kf(k), vf(v), of(out), dof(dout);
  FloatOut dqf(dq, true), dkf(dk, true), dvf(dv, true);
  const float* l = lse.data<float>();
  const float* dl = dlse.defined() ? dlse.data<float>() : nullptr;
  const std::int32_t *qp = q_pos.data<std::int32_t>(), *kp = k_pos.data<std::int32_t>();
  const float scale = 1.0f / std::sqrt(static_cast<float>(m.d));
  Tensor s_t = Tensor::empty({m.tq, m.tk}, DType::f32, MemCategory::Temporary);
  float* s = s_t.data<float>();
  for (std::int64_t bi = 0; bi < m.b; ++bi)
    for (std::int64_t hq = 0; hq < m.h; ++hq) {
      const std::int64_t hk = hq / (m.h / m.g);
      scores(m, qf.data(), kf.data(), qp, kp, bi, hq, s);
      for (std::int64_t i = 0; i < m.tq; ++i) {
        const std::int64_t row_index = (bi * m.h + hq) * m.tq + i;
        if (l[row_index] == -std::numeric_limits<float>::infinity()) continue;  // nothing visible
        const float* doi = dof.data() + ((bi * m.tq + i) * m.h + hq) * m.d;
        const float* oi = of.data() + ((bi * m.tq + i) * m.h + hq) * m.d;
        const float* qi = qf.data() + ((bi * m.tq + i) * m.h + hq) * m.d;
        float* dqi = dqf.data() + ((bi * m.tq + i) * m.h + hq) * m.d;
        float delta = 0.0f;  // rowsum(dout ∘ out)
        for (std::int64_t e = 0; e < m.d; ++e) delta += doi[e] * oi[e];
        const float extra = dl ? dl[row_index] : 0.0f;
        for (std::int64_t j = 0; j < m.tk; ++j) {
          if (s[i * m.tk + j] == -std::numeric_limits<float>::infinity()) continue;
          const float p = std::exp(s[i * m.tk + j] - l[row_index]);
          const float* vj = vf.data() + ((bi * m.tk + j) * m.g + hk) * m.d;
          const float* kj = kf.data() + ((bi * m.tk + j) * m.g + hk) * m.d;
          float* dvj = dvf.data() + ((bi * m.tk + j) * m.g + hk) * m.d;
          float* dkj = dkf.data() + ((bi * m.tk + j) * m.g + hk) * m.d;
          float dp = 0.0f;
          for (std::int64_t e = 0; e < m.d; ++e) {
            dp += doi[e] * vj[e];
            dvj[e] += p * doi[e];
          }
          const float ds = p * (dp - delta + extra) * scale;
          for (std::int64_t e = 0; e < m.d; ++e) {
            dqi[e] += ds * kj[e];
            dkj[e] += ds * qi[e];
          }
        }
      }
    }
  dqf.store();
  dkf.store();
  dvf.store();
}

}  // namespace usp::ops
