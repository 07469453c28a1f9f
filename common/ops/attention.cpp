// Causal grouped-query attention on sgemm, one (batch, query head) at a time (see ops.hpp).
//
// In the [B, T, H, D] layout a head's [T, D] matrix is strided (row stride H·D, or G·D for k and
// v), which sgemm takes as its leading dimension: no transposing copies. Query head j reads kv
// head j / (H/G). With s = 1/√D and P = softmax(s · q kᵀ + causal mask) [T, T]:
//   forward   out = P · v
//   backward  dP = dout · vᵀ,  dS = P ∘ (dP - rowsum(dP ∘ P)),
//             dq = s · dS · k,  dk = s · dSᵀ · q,  dv = Pᵀ · dout   (dk, dv summed over a group)
// Causality: rows are processed in blocks of kBlock queries, and a block's matmuls stop at its
// last key, so the masked upper triangle is (up to one block's diagonal square) never computed;
// entries above the diagonal are zeroed. dk and dv go by blocks of kBlock keys, which only
// queries at or after the block's first key read.
//
// FLOPs (the Megatron / playbook convention used for MFU): each [T, T]·D matmul counts as a full
// 2·T·T·D per (batch, head), although the causal blocking performs about half of it. Forward
// counts two (q kᵀ, P v), backward four (dP, dq, dk, dv) plus one (q kᵀ) when the probabilities
// are recomputed. The softmax is element-wise and adds none.
#include <algorithm>
#include <cmath>

#include "common/ops/float_args.hpp"
#include "common/ops/gemm.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif
#include "common/ops/simd_math.hpp"

namespace usp::ops {

using namespace detail;

namespace {

constexpr std::int64_t kBlock = 64;

struct Dims {
  std::int64_t b, t, h, g, d;
  std::int64_t rep() const { return h / g; }  // query heads per kv head
  // Where query head hq of sample bi starts in a [B, T, H, D] tensor, and its kv head in a
  // [B, T, G, D] one (each row of a head is H·D or G·D floats on).
  std::int64_t q_head(std::int64_t bi, std::int64_t hq) const { return bi * t * h * d + hq * d; }
  std::int64_t kv_head(std::int64_t bi, std::int64_t hq) const { return bi * t * g * d + hq / rep() * d; }
};

// q [B, T, H, D], k and v [B, T, G, D], H a multiple of G.
Dims check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_float(op, "q", q);
  check_float(op, "k", k);
  check_float(op, "v", v);
  USP_CHECK(q.ndim() == 4 && q.dim(3) > 0,
            std::string("ops::") + op + ": q is " + shape_str(q.shape()) + ", expected [B, T, H, D]");
  USP_CHECK(k.ndim() == 4 && k.dim(0) == q.dim(0) && k.dim(1) == q.dim(1) && k.dim(3) == q.dim(3) &&
                k.dim(2) > 0 && q.dim(2) % k.dim(2) == 0,
            std::string("ops::") + op + ": k " + shape_str(k.shape()) + " does not match q " +
                shape_str(q.shape()) + " (expected [B, T, G, D] with G dividing H)");
  check_shape(op, "v", v, k.shape());
  return {q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3)};
}

// e^(x - max) / Σ over the n entries of one row, in place.
USP_SIMD_CLONES void softmax_row(float* x, std::int64_t n) {
  const float m = lane_max(x, n);
  for (std::int64_t j = 0; j < n; ++j) x[j] = exp_approx(x[j] - m);
  const float inv = 1.0f / lane_sum(x, n);
  for (std::int64_t j = 0; j < n; ++j) x[j] *= inv;
}

// One row of the softmax backward, in place over its n unmasked entries: d <- p ∘ (d - Σ d∘p).
USP_SIMD_CLONES void softmax_backward_row(const float* p, float* d, std::int64_t n) {
  const float dot = lane_dot(d, p, n);
  for (std::int64_t j = 0; j < n; ++j) d[j] = p[j] * (d[j] - dot);
}

// Scores of query rows [r0, r1) of one head: p rows r0..r1 (row stride T) = softmax(s · q kᵀ)
// over keys 0..t, zero for keys after t.
void causal_probs_block(const float* q, std::int64_t ldq, const float* k, std::int64_t ldk,
                        std::int64_t t_len, std::int64_t d, float s, std::int64_t r0, std::int64_t r1,
                        float* p) {
  sgemm(false, true, r1 - r0, r1, d, s, q + r0 * ldq, ldq, k, ldk, 0.0f, p + r0 * t_len, t_len);
  for (std::int64_t t = r0; t < r1; ++t) {
    float* row = p + t * t_len;
    softmax_row(row, t + 1);
    std::fill(row + t + 1, row + t_len, 0.0f);
  }
}

// out rows r0..r1 [r1-r0, D] (row stride ldo) = P rows r0..r1 [r1-r0, r1] · v [r1, D]: the
// causal rows read keys up to their block's last one only.
void probs_times_v_block(const float* p, const float* v, std::int64_t ldv, std::int64_t t_len, std::int64_t d,
                         std::int64_t r0, std::int64_t r1, float* out, std::int64_t ldo) {
  sgemm(false, false, r1 - r0, d, r1, 1.0f, p + r0 * t_len, t_len, v, ldv, 0.0f, out + r0 * ldo, ldo);
}

// probs, when given, is [B, H, T, T] of a float dtype; true when it is f32 (used in place).
bool check_probs(const char* op, const Tensor& probs, const Dims& dm) {
  if (!probs.defined()) return false;
  check_float(op, "probs", probs);
  check_shape(op, "probs", probs, {dm.b, dm.h, dm.t, dm.t});
  return probs.dtype() == DType::f32;
}

// One head's probabilities P [T, T] (starting at element `head` of probs [B, H, T, T]) as the
// backward reads them: an f32 probs in place, a narrower one widened into p_scratch; null when
// none was saved.
const float* saved_head_probs(const Tensor& probs, std::int64_t head, std::int64_t t_len, float* p_scratch) {
  if (!probs.defined()) return nullptr;
  if (probs.dtype() == DType::f32) return probs.data<float>() + head;
  convert_to_float(probs.dtype(), static_cast<const std::uint16_t*>(probs.raw()) + head, p_scratch,
                   static_cast<std::size_t>(t_len * t_len));
  return p_scratch;
}

// One head's P [T, T] rebuilt from q and k into p_scratch, rounded to the activation dtype
// exactly as a saved probs tensor would have been, so recomputation changes no gradient bit in
// bf16 either; narrow [T, T] holds the narrow values on the way.
void rebuild_head_probs(const float* q, std::int64_t ldq, const float* k, std::int64_t ldk, std::int64_t t_len,
                        std::int64_t d, float s, DType activation, float* narrow, float* p_scratch) {
  for (std::int64_t r0 = 0; r0 < t_len; r0 += kBlock)
    causal_probs_block(q, ldq, k, ldk, t_len, d, s, r0, std::min(r0 + kBlock, t_len), p_scratch);
  if (activation != DType::f32) {
    convert_from_float(p_scratch, activation, narrow, static_cast<std::size_t>(t_len * t_len));
    convert_to_float(activation, narrow, p_scratch, static_cast<std::size_t>(t_len * t_len));
  }
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& probs) {
  const char* op = "attention_forward";
  const Dims dm = check_qkv(op, q, k, v);
  check_float(op, "out", out);
  check_shape(op, "out", out, q.shape());
  const bool probs_f32 = check_probs(op, probs, dm);
  const std::int64_t T = dm.t, D = dm.d, HD = dm.h * D, GD = dm.g * D;
  const float s = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&q, &k, &v, &out, &probs});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::attention_forward(q, k, v, out, probs);
    add_flops(4 * dm.b * dm.h * T * T * D);
    return;
  }
#endif

  FloatIn qf(q), kf(k), vf(v);
  FloatOut of(out, false);
  // One head's probabilities when they are not written straight into an f32 probs.
  Tensor scratch;
  if (!probs_f32) scratch = Tensor::empty({T, T}, DType::f32, MemCategory::Temporary);

  for (std::int64_t bi = 0; bi < dm.b; ++bi)
    for (std::int64_t hq = 0; hq < dm.h; ++hq) {
      const float* qp = qf.data() + dm.q_head(bi, hq);
      const float* kp = kf.data() + dm.kv_head(bi, hq);
      const float* vp = vf.data() + dm.kv_head(bi, hq);
      float* op_ = of.data() + dm.q_head(bi, hq);
      float* p = probs_f32 ? probs.data<float>() + (bi * dm.h + hq) * T * T : scratch.data<float>();
      for (std::int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const std::int64_t r1 = std::min(r0 + kBlock, T);
        causal_probs_block(qp, HD, kp, GD, T, D, s, r0, r1, p);
        probs_times_v_block(p, vp, GD, T, D, r0, r1, op_, HD);
      }
      if (probs.defined() && !probs_f32)
        convert_from_float(p, probs.dtype(),
                           static_cast<std::uint16_t*>(probs.raw()) + (bi * dm.h + hq) * T * T,
                           static_cast<std::size_t>(T * T));
    }
  of.store();
  add_flops(4 * dm.b * dm.h * T * T * D);
}

void attention_forward_from_probs(const Tensor& probs, const Tensor& v, Tensor& out) {
  const char* op = "attention_forward_from_probs";
  check_float(op, "v", v);
  check_float(op, "out", out);
  USP_CHECK(probs.dtype() == DType::f32 && probs.ndim() == 4 && probs.dim(2) == probs.dim(3),
            std::string("ops::") + op + ": probs is " + shape_str(probs.shape()) + " " + dtype_name(probs.dtype()) +
                ", expected [B, H, T, T] f32");
  const Dims dm{probs.dim(0), probs.dim(2), probs.dim(1), v.ndim() == 4 ? v.dim(2) : 0, v.ndim() == 4 ? v.dim(3) : 0};
  USP_CHECK(v.ndim() == 4 && v.dim(0) == dm.b && v.dim(1) == dm.t && dm.g > 0 && dm.d > 0 && dm.h % dm.g == 0,
            std::string("ops::") + op + ": v " + shape_str(v.shape()) + " does not match probs " +
                shape_str(probs.shape()) + " (expected [B, T, G, D] with G dividing H)");
  check_shape(op, "out", out, {dm.b, dm.t, dm.h, dm.d});
  const std::int64_t T = dm.t, D = dm.d, HD = dm.h * D, GD = dm.g * D;
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&probs, &v, &out});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::attention_forward_from_probs(probs, v, out);
    add_flops(2 * dm.b * dm.h * T * T * D);
    return;
  }
#endif
  FloatIn vf(v);
  FloatOut of(out, false);
  for (std::int64_t bi = 0; bi < dm.b; ++bi)
    for (std::int64_t hq = 0; hq < dm.h; ++hq) {
      const float* p = probs.data<float>() + (bi * dm.h + hq) * T * T;
      const float* vp = vf.data() + dm.kv_head(bi, hq);
      float* op_ = of.data() + dm.q_head(bi, hq);
      for (std::int64_t r0 = 0; r0 < T; r0 += kBlock)
        probs_times_v_block(p, vp, GD, T, D, r0, std::min(r0 + kBlock, T), op_, HD);
    }
  of.store();
  add_flops(2 * dm.b * dm.h * T * T * D);
}

void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& probs, Tensor& dq, Tensor& dk, Tensor& dv) {
  const char* op = "attention_backward";
  const Dims dm = check_qkv(op, q, k, v);
  check_float(op, "dout", dout);
  check_shape(op, "dout", dout, q.shape());
  check_float(op, "dq", dq);
  check_shape(op, "dq", dq, q.shape());
  check_float(op, "dk", dk);
  check_shape(op, "dk", dk, k.shape());
  check_float(op, "dv", dv);
  check_shape(op, "dv", dv, k.shape());
  const bool probs_f32 = check_probs(op, probs, dm);
  const std::int64_t T = dm.t, D = dm.d, HD = dm.h * D, GD = dm.g * D;
  const float s = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&dout, &q, &k, &v, &probs, &dq, &dk, &dv});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::attention_backward(dout, q, k, v, probs, dq, dk, dv);
    add_flops((probs.defined() ? 8 : 10) * dm.b * dm.h * T * T * D);
    return;
  }
#endif

  FloatIn dof(dout), qf(q), kf(k), vf(v);
  FloatOut dqf(dq, false), dkf(dk, false), dvf(dv, false);
  // [2, T, T]: one head's dP (turned into dS in place) and, unless an f32 probs is given, its P.
  Tensor scratch = Tensor::empty({probs_f32 ? 1 : 2, T, T}, DType::f32, MemCategory::Temporary);
  float* ds = scratch.data<float>();
  float* p_scratch = probs_f32 ? nullptr : ds + T * T;

  for (std::int64_t bi = 0; bi < dm.b; ++bi)
    for (std::int64_t hq = 0; hq < dm.h; ++hq) {
      const std::int64_t qo = dm.q_head(bi, hq), kvo = dm.kv_head(bi, hq);
      const float *qp = qf.data() + qo, *kp = kf.data() + kvo, *vp = vf.data() + kvo, *dop = dof.data() + qo;
      float *dqp = dqf.data() + qo, *dkp = dkf.data() + kvo, *dvp = dvf.data() + kvo;
      const std::int64_t head = (bi * dm.h + hq) * T * T;

      const float* p = saved_head_probs(probs, head, T, p_scratch);
      if (!p) {
        // Rebuilt in the activation dtype (q's); the dS buffer, not in use yet, is the scratch.
        rebuild_head_probs(qp, HD, kp, GD, T, D, s, q.dtype(), ds, p_scratch);
        p = p_scratch;
      }

      for (std::int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const std::int64_t r1 = std::min(r0 + kBlock, T);
        // dP rows r0..r1 [r1-r0, r1] = dout [r1-r0, D] · v [r1, D]ᵀ
        sgemm(false, true, r1 - r0, r1, D, 1.0f, dop + r0 * HD, HD, vp, GD, 0.0f, ds + r0 * T, T);
        for (std::int64_t t = r0; t < r1; ++t) {
          float* drow = ds + t * T;
          softmax_backward_row(p + t * T, drow, t + 1);
          std::fill(drow + t + 1, drow + r1, 0.0f);
        }
        // dq rows r0..r1 [r1-r0, D] = s · dS [r1-r0, r1] · k [r1, D]
        sgemm(false, false, r1 - r0, D, r1, s, ds + r0 * T, T, kp, GD, 0.0f, dqp + r0 * HD, HD);
      }
      // Keys c0..c1 are read by queries c0..T: dk rows [c1-c0, D] = s · dS[c0:T, c0:c1]ᵀ · q[c0:T],
      // dv rows = P[c0:T, c0:c1]ᵀ · dout[c0:T]. The group's first query head overwrites.
      const float beta = hq % dm.rep() == 0 ? 0.0f : 1.0f;
      for (std::int64_t c0 = 0; c0 < T; c0 += kBlock) {
        const std::int64_t c1 = std::min(c0 + kBlock, T);
        sgemm(true, false, c1 - c0, D, T - c0, s, ds + c0 * T + c0, T, qp + c0 * HD, HD, beta,
              dkp + c0 * GD, GD);
        sgemm(true, false, c1 - c0, D, T - c0, 1.0f, p + c0 * T + c0, T, dop + c0 * HD, HD, beta,
              dvp + c0 * GD, GD);
      }
    }
  dqf.store();
  dkf.store();
  dvf.store();
  const std::int64_t per_matmul = 2 * dm.b * dm.h * T * T * D;
  add_flops((probs.defined() ? 4 : 5) * per_matmul);
}

}  // namespace usp::ops
