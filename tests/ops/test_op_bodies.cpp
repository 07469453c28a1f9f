// The CUDA ops' kernels run on the CPU: every thread of each kernel's grid, one after the other,
// through the same bodies the kernels call (common/ops/cuda/op_bodies.hpp); a block's reduction
// is the loop over its threads' partials. The results are compared with the CPU ops on shapes
// that are not multiples of the 256 threads of a row block (C = 300 spans two strides, V = 37
// leaves most threads idle), so CI without a GPU checks the kernels' indexing, masking and
// accumulation rules.
//
// Tolerances: the bodies compute in fp32 like the CPU ops, summing in another order (256 strided
// partials vs the CPU's 8 lanes) and with the C library's expf where the CPU uses exp_approx
// (about 2 ulp): a few fp32 ulps of the result, so 1e-5 relative to the output's magnitude.
// Pure data movement (embedding, RoPE's rotation with the same cosines) is compared exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/ops/cuda/op_bodies.hpp"
#include "common/ops/gemm.hpp"
#include "common/ops/ops.hpp"
#include "common/optim/adamw.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;
namespace body = usp::ops::cuda_body;

namespace {

constexpr int kThreads = 256;  // a row kernel's block (op_kernels.cu)
constexpr double kTol = 1e-5;

std::vector<float> floats(const Vec& v) { return std::vector<float>(v.begin(), v.end()); }
Vec doubles(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// A block's reduction of its threads' partials, as the kernels' block_sum / block_max return it.
template <typename Partial>
float block_sum(Partial partial) {
  float s = 0.0f;
  for (int t = 0; t < kThreads; ++t) s += partial(t);
  return s;
}
template <typename Partial>
float block_max(Partial partial) {
  float m = -INFINITY;
  for (int t = 0; t < kThreads; ++t) m = std::max(m, partial(t));
  return m;
}

// The CPU op's cross-entropy of logits lv [n, v] with targets tg: its mean loss against `loss`
// and its gradient (scaled by `scale`) against `dlogits`, both to kTol.
void check_cross_entropy(const Vec& lv, const std::vector<std::int32_t>& tg, std::int64_t n, std::int64_t v,
                         float scale, double loss, const std::vector<float>& dlogits) {
  const Tensor targets = int_tensor(tg, {n});
  Tensor lt = tensor_of(lv, {n, v}), dt = Tensor::empty({n, v});
  const double want = ops::cross_entropy_forward(lt, targets);
  ops::cross_entropy_backward(lt, targets, dt, scale);
  CHECK(std::fabs(loss - want) < kTol * std::fabs(want));
  CHECK(max_rel_error(doubles(dlogits), values_of(dt)) < kTol);
}

}  // namespace

TEST_CASE("CUDA bodies: SwiGLU, add and scale, thread per element", "[ops][cuda-bodies]") {
  const std::int64_t n = 7, f = 45;  // 315 elements: the grid's last block part-filled
  const Vec gv = random_values(n * f, 1, -4, 4), uv = random_values(n * f, 2), dzv = random_values(n * f, 3);
  const std::vector<float> g = floats(gv), u = floats(uv), dz = floats(dzv);
  std::vector<float> z(g.size()), dg(g.size()), du(g.size());
  for (std::int64_t i = 0; i < n * f; ++i) {
    body::swiglu_forward(i, g.data(), u.data(), z.data());
    body::swiglu_backward(i, dz.data(), g.data(), u.data(), dg.data(), du.data());
  }
  Tensor gt = tensor_of(gv, {n, f}), ut = tensor_of(uv, {n, f}), dzt = tensor_of(dzv, {n, f});
  Tensor zt = Tensor::empty({n, f}), dgt = Tensor::empty({n, f}), dut = Tensor::empty({n, f});
  ops::swiglu_forward(gt, ut, zt);
  ops::swiglu_backward(dzt, gt, ut, dgt, dut);
  CHECK(max_rel_error(doubles(z), values_of(zt)) < kTol);
  CHECK(max_rel_error(doubles(dg), values_of(dgt)) < kTol);
  CHECK(max_rel_error(doubles(du), values_of(dut)) < kTol);

  std::vector<float> y = z;
  for (std::int64_t i = 0; i < n * f; ++i) body::add(i, g.data(), y.data());
  for (std::int64_t i = 0; i < n * f; ++i) body::scale(i, 0.5f, y.data());
  for (std::int64_t i = 0; i < n * f; ++i) CHECK(y[i] == (z[i] + g[i]) * 0.5f);
}

TEST_CASE("CUDA bodies: embedding gather by element, scatter-add by column", "[ops][cuda-bodies]") {
  const std::int64_t vocab = 11, c = 13, n = 9;
  const std::vector<std::int32_t> tok = {3, 0, 10, 3, 7, 3, 1, 10, 5};  // repeats: the scatter must add them all
  const Vec tv = random_values(vocab * c, 4), dv = random_values(n * c, 5), d0 = random_values(vocab * c, 6);
  const std::vector<float> table = floats(tv), dout = floats(dv);
  std::vector<float> out(n * c), dtable = floats(d0);
  for (std::int64_t i = 0; i < n * c; ++i) body::embedding_forward(i, tok.data(), table.data(), c, out.data());
  for (std::int64_t col = 0; col < c; ++col)
    body::embedding_backward_column(col, tok.data(), dout.data(), n, c, dtable.data());

  const Tensor tokens = int_tensor(tok, {n});
  Tensor tt = tensor_of(tv, {vocab, c}), ot = Tensor::empty({n, c}), dt = tensor_of(d0, {vocab, c});
  ops::embedding_forward(tokens, tt, ot);
  ops::embedding_backward(tokens, tensor_of(dv, {n, c}), dt);
  CHECK(doubles(out) == values_of(ot));
  CHECK(doubles(dtable) == values_of(dt));  // the same additions in the same order (n = 0, 1, ...)
}

TEST_CASE("CUDA bodies: RoPE, thread per rotated pair, forward and back", "[ops][cuda-bodies]") {
  const std::int64_t b = 2, t = 5, h = 3, d = 6, half = d / 2;
  const double theta = 10000.0;
  const Vec xv = random_values(b * t * h * d, 7);
  // The cosines and sines as the CPU op computes them (double, rounded once to f32).
  std::vector<float> cos_sin(2 * t * half);
  for (std::int64_t i = 0; i < half; ++i)
    for (std::int64_t p = 0; p < t; ++p) {
      const double angle = static_cast<double>(p) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      cos_sin[p * half + i] = static_cast<float>(std::cos(angle));
      cos_sin[t * half + p * half + i] = static_cast<float>(std::sin(angle));
    }
  for (const float sign : {1.0f, -1.0f}) {
    std::vector<float> x = floats(xv);
    for (std::int64_t p = 0; p < b * t * h * half; ++p) body::rope_pair(p, t, h, d, cos_sin.data(), sign, x.data());
    Tensor xt = tensor_of(xv, {b, t, h, d});
    if (sign > 0) ops::rope_forward(xt, theta);
    else ops::rope_backward(xt, theta);
    INFO("sign " << sign);
    CHECK(max_rel_error(doubles(x), values_of(xt)) < 1e-6);  // same products; only FMA contraction may differ
  }
}

TEST_CASE("CUDA bodies: RMSNorm, block per row, dw by column", "[ops][cuda-bodies]") {
  // c: two strides of 256 threads, the second part-filled; n: three strides of dw's 32 lanes, likewise
  const std::int64_t n = 70, c = 300;
  const float eps = 1e-5f;
  const Vec xv = random_values(n * c, 8), wv = random_values(c, 9, 0.5, 1.5), dyv = random_values(n * c, 10);
  const Vec dx0 = random_values(n * c, 11), dw0 = random_values(c, 12);
  const std::vector<float> x = floats(xv), w = floats(wv), dy = floats(dyv);
  std::vector<float> y(n * c), rstd(n), dx = floats(dx0), dw = floats(dw0);
  for (std::int64_t row = 0; row < n; ++row) {
    const float r = body::rmsnorm_rstd(
        block_sum([&](int th) { return body::rmsnorm_partial(row, th, kThreads, x.data(), c); }), c, eps);
    rstd[row] = r;
    for (int th = 0; th < kThreads; ++th) body::rmsnorm_write(row, th, kThreads, x.data(), w.data(), r, c, y.data());
  }
  for (std::int64_t row = 0; row < n; ++row) {
    const float gx = block_sum(
        [&](int th) { return body::rmsnorm_backward_partial(row, th, kThreads, dy.data(), x.data(), w.data(), c); });
    for (int th = 0; th < kThreads; ++th)
      body::rmsnorm_backward_write(row, th, kThreads, dy.data(), x.data(), w.data(), rstd[row], gx, c, dx.data());
  }
  for (std::int64_t col = 0; col < c; ++col) {  // the kernel's lanes, added in lane order
    float acc = 0.0f;
    for (int lane = 0; lane < body::kDwLanes; ++lane)
      acc += body::rmsnorm_dw_partial(col, lane, dy.data(), x.data(), rstd.data(), n, c);
    dw[col] += acc;
  }

  Tensor xt = tensor_of(xv, {n, c}), wt = tensor_of(wv, {c}), yt = Tensor::empty({n, c}), rt = Tensor::empty({n});
  ops::rmsnorm_forward(xt, wt, yt, rt, eps);
  Tensor dxt = tensor_of(dx0, {n, c}), dwt = tensor_of(dw0, {c});
  ops::rmsnorm_backward(tensor_of(dyv, {n, c}), xt, wt, rt, dxt, dwt);
  CHECK(max_rel_error(doubles(y), values_of(yt)) < kTol);
  CHECK(max_rel_error(doubles(rstd), values_of(rt)) < kTol);
  CHECK(max_rel_error(doubles(dx), values_of(dxt)) < kTol);  // accumulated onto dx0
  CHECK(max_rel_error(doubles(dw), values_of(dwt)) < kTol);  // accumulated onto dw0
}

TEST_CASE("CUDA bodies: cross-entropy, block per row, gradient in place", "[ops][cuda-bodies]") {
  const std::int64_t n = 5, v = 37;
  const std::vector<std::int32_t> tg = {0, 36, 17, 17, 5};
  const Vec lv = random_values(n * v, 13, -6, 6);
  const float scale = 8.0f;
  std::vector<float> logits = floats(lv), row_loss(n);
  // Forward, then backward overwriting the logits row by row (the kernels allow dlogits = logits).
  for (std::int64_t row = 0; row < n; ++row) {
    const float* xr = logits.data() + row * v;
    const float m = block_max([&](int th) { return body::row_max_partial(xr, v, th, kThreads); });
    const float s = block_sum([&](int th) { return body::row_sum_exp_partial(xr, v, m, th, kThreads); });
    row_loss[row] = body::cross_entropy_row_loss(m, s, xr[tg[row]]);
    for (int th = 0; th < kThreads; ++th)
      body::cross_entropy_backward_write(xr, v, tg[row], m, s, scale / static_cast<float>(n), th, kThreads,
                                         logits.data() + row * v);
  }
  double loss = 0;
  for (float l : row_loss) loss += l;
  check_cross_entropy(lv, tg, n, v, scale, loss / static_cast<double>(n), logits);
}

TEST_CASE("CUDA bodies: cross-entropy over a vocabulary split in column shards, as chapter 06 runs it",
          "[ops][cuda-bodies]") {
  // V = 37 over 3 shards of 13, 13 and 11 columns (the kernels take any V_r); targets in each.
  const std::int64_t n = 5, v = 37;
  const std::vector<std::int64_t> begins = {0, 13, 26, 37};
  const std::vector<std::int32_t> tg = {0, 36, 17, 13, 25};
  const Vec lv = random_values(n * v, 17, -6, 6);
  const float scale = 8.0f;
  const std::vector<float> logits = floats(lv);
  std::vector<float> dlogits(static_cast<std::size_t>(n * v));
  double loss = 0;
  for (std::int64_t row = 0; row < n; ++row) {
    // Each shard's block over its columns [b, e) of the row (a [N, V_r] tensor of its own).
    std::vector<std::vector<float>> shard(begins.size() - 1);
    for (std::size_t r = 0; r + 1 < begins.size(); ++r)
      shard[r].assign(logits.begin() + row * v + begins[r], logits.begin() + row * v + begins[r + 1]);
    auto width = [&](std::size_t r) { return begins[r + 1] - begins[r]; };
    float m = -INFINITY;  // the all-reduce max of the shards' row maxima
    for (std::size_t r = 0; r < shard.size(); ++r)
      m = std::max(m, block_max([&](int th) { return body::row_max_partial(shard[r].data(), width(r), th, kThreads); }));
    float s = 0.0f, zt = 0.0f;  // the all-reduce sums
    for (std::size_t r = 0; r < shard.size(); ++r) {
      s += block_sum([&](int th) { return body::row_sum_exp_partial(shard[r].data(), width(r), m, th, kThreads); });
      zt += body::shard_target_logit(shard[r].data(), width(r), tg[row], begins[r]);
    }
    const float lse = static_cast<float>(static_cast<double>(m) + std::log(static_cast<double>(s)));
    loss += static_cast<double>(lse) - zt;
    for (std::size_t r = 0; r < shard.size(); ++r) {
      const auto local = static_cast<std::int32_t>(tg[row] - begins[r]);
      for (int th = 0; th < kThreads; ++th)
        body::cross_entropy_backward_write(shard[r].data(), width(r), local, lse, 1.0f, scale / static_cast<float>(n),
                                           th, kThreads, dlogits.data() + row * v + begins[r]);
    }
  }
  check_cross_entropy(lv, tg, n, v, scale, loss / static_cast<double>(n), dlogits);
}

TEST_CASE("CUDA bodies: attention's causal softmax rows and their backward, around the head GEMMs",
          "[ops][cuda-bodies]") {
  // ops_cuda.cpp's attention per (batch, head): S = s·q kᵀ, the causal softmax rows, out = P·v;
  // backward dP = dout·vᵀ, the softmax backward rows, dq = s·dS·k, dk += s·dSᵀ·q, dv += Pᵀ·dout.
  // The GEMMs are the CPU's sgemm with the same arguments device_sgemm gets.
  const std::int64_t b = 2, t = 7, h = 4, g = 2, d = 5, HD = h * d, GD = g * d;
  const float s = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const Vec qv = random_values(b * t * h * d, 14), kv = random_values(b * t * g * d, 15),
            vv = random_values(b * t * g * d, 16), dov = random_values(b * t * h * d, 17);
  const std::vector<float> q = floats(qv), k = floats(kv), v = floats(vv), dout = floats(dov);
  std::vector<float> out(q.size()), probs(b * h * t * t), dq(q.size()), dk(k.size(), 0.0f), dv(v.size(), 0.0f),
      ds(t * t);
  const auto softmax_rows = [&](float* p) {
    for (std::int64_t r = 0; r < t; ++r) {
      float* row = p + r * t;
      const std::int64_t len = r + 1;
      const float m = block_max([&](int th) { return body::row_max_partial(row, len, th, kThreads); });
      const float sum = block_sum([&](int th) { return body::row_sum_exp_partial(row, len, m, th, kThreads); });
      std::vector<float> copy(row, row + t);  // the kernel reads the whole row before any thread writes
      for (int th = 0; th < kThreads; ++th) body::row_softmax_write(copy.data(), len, t, m, 1.0f / sum, th, kThreads, row);
    }
  };
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t hq = 0; hq < h; ++hq) {
      const std::int64_t hk = hq / (h / g);
      float* p = probs.data() + (bi * h + hq) * t * t;
      const float* qp = q.data() + bi * t * HD + hq * d;
      const float* kp = k.data() + bi * t * GD + hk * d;
      const float* vp = v.data() + bi * t * GD + hk * d;
      const float* dop = dout.data() + bi * t * HD + hq * d;
      // S over the whole [T, T]: the causal mask comes from the softmax rows alone.
      ops::detail::sgemm(false, true, t, t, d, s, qp, HD, kp, GD, 0.0f, p, t);
      softmax_rows(p);
      ops::detail::sgemm(false, false, t, d, t, 1.0f, p, t, vp, GD, 0.0f, out.data() + bi * t * HD + hq * d, HD);
      ops::detail::sgemm(false, true, t, t, d, 1.0f, dop, HD, vp, GD, 0.0f, ds.data(), t);
      for (std::int64_t r = 0; r < t; ++r) {
        const float dot =
            block_sum([&](int th) { return body::row_dot_partial(ds.data() + r * t, p + r * t, r + 1, th, kThreads); });
        for (int th = 0; th < kThreads; ++th)
          body::softmax_backward_write(p + r * t, r + 1, t, dot, th, kThreads, ds.data() + r * t);
      }
      ops::detail::sgemm(false, false, t, d, t, s, ds.data(), t, kp, GD, 0.0f, dq.data() + bi * t * HD + hq * d, HD);
      ops::detail::sgemm(true, false, t, d, t, s, ds.data(), t, qp, HD, 1.0f, dk.data() + bi * t * GD + hk * d, GD);
      ops::detail::sgemm(true, false, t, d, t, 1.0f, p, t, dop, HD, 1.0f, dv.data() + bi * t * GD + hk * d, GD);
    }

  Tensor qt = tensor_of(qv, {b, t, h, d}), kt = tensor_of(kv, {b, t, g, d}), vt = tensor_of(vv, {b, t, g, d});
  Tensor ot = Tensor::empty({b, t, h, d}), pt = Tensor::empty({b, h, t, t});
  ops::attention_forward(qt, kt, vt, ot, pt);
  Tensor dqt = Tensor::empty({b, t, h, d}), dkt = Tensor::empty({b, t, g, d}), dvt = Tensor::empty({b, t, g, d});
  ops::attention_backward(tensor_of(dov, {b, t, h, d}), qt, kt, vt, pt, dqt, dkt, dvt);
  CHECK(max_rel_error(doubles(probs), values_of(pt)) < kTol);  // zeros above the diagonal included
  CHECK(max_rel_error(doubles(out), values_of(ot)) < kTol);
  CHECK(max_rel_error(doubles(dq), values_of(dqt)) < kTol);
  CHECK(max_rel_error(doubles(dk), values_of(dkt)) < kTol);
  CHECK(max_rel_error(doubles(dv), values_of(dvt)) < kTol);
}

TEST_CASE("CUDA bodies: attention over a block of keys at positions, rows then key columns", "[ops][cuda-bodies]") {
  // B 2, Tq 5 queries at positions 6..10 against Tk 9 keys at 3..11: query 6 sees keys 3..6,
  // query 10 all but 11; GQA (H 4 over G 2); D 20 < the 256 threads. A second case puts every key
  // after query 6 (no visible key: lse -inf, out 0, no gradient).
  for (const std::int32_t first_key : {3, 7}) {
    INFO("keys from position " << first_key);
    const std::int64_t B = 2, Tq = 5, Tk = 9, H = 4, G = 2, D = 20;
    const std::vector<std::int32_t> qp = iota_positions(Tq, 6), kp = iota_positions(Tk, first_key);
    const Vec qv = random_values(B * Tq * H * D, 41, -1, 1), kv = random_values(B * Tk * G * D, 42, -1, 1);
    const Vec vv = random_values(B * Tk * G * D, 43, -1, 1), dov = random_values(B * Tq * H * D, 44, -1, 1);
    const Vec dlv = random_values(B * H * Tq, 45, -1, 1);
    const std::vector<float> q = floats(qv), k = floats(kv), v = floats(vv), dout = floats(dov), dlse = floats(dlv);
    const body::AttentionBlock a{B, Tq, Tk, H, G, D, 1.0f / std::sqrt(static_cast<float>(D)), qp.data(), kp.data()};
    const std::int64_t rows = B * H * Tq, cols = B * Tk * G;
    std::vector<float> scratch(static_cast<std::size_t>(rows * Tk)), out(q.size()), lse(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {  // the forward kernel, block by block
      float* s = scratch.data() + r * Tk;
      const float m = block_max([&](int th) { return body::block_scores_partial(a, q.data(), k.data(), r, th, kThreads, s); });
      const float sum = block_sum([&](int th) { return body::block_exp_partial(a, m, th, kThreads, s); });
      for (int th = 0; th < kThreads; ++th)
        body::block_out_write(a, v.data(), s, sum > 0.0f ? 1.0f / sum : 0.0f, r, th, kThreads, out.data());
      lse[static_cast<std::size_t>(r)] = body::block_lse(m, sum);
    }
    // Backward onto non-zero gradients (the op accumulates): rows, then key columns.
    const Vec dq0 = random_values(q.size(), 46, -1, 1), dk0 = random_values(k.size(), 47, -1, 1),
              dv0 = random_values(k.size(), 48, -1, 1);
    std::vector<float> dq = floats(dq0), dk = floats(dk0), dv = floats(dv0), P(scratch.size()), dS(scratch.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      const float delta =
          block_sum([&](int th) { return body::block_delta_partial(a, dout.data(), out.data(), r, th, kThreads); });
      for (int th = 0; th < kThreads; ++th)
        body::block_ds_row(a, q.data(), k.data(), v.data(), dout.data(), lse[static_cast<std::size_t>(r)], delta,
                           dlse[static_cast<std::size_t>(r)], r, th, kThreads, P.data() + r * Tk, dS.data() + r * Tk);
      for (int th = 0; th < kThreads; ++th) body::block_dq_write(a, k.data(), dS.data() + r * Tk, r, th, kThreads, dq.data());
    }
    for (std::int64_t c = 0; c < cols; ++c)
      for (int th = 0; th < kThreads; ++th)
        body::block_dkv_column(a, q.data(), dout.data(), P.data(), dS.data(), c, th, kThreads, dk.data(), dv.data());

    const Tensor qt = tensor_of(qv, {B, Tq, H, D}), kt = tensor_of(kv, {B, Tk, G, D}), vt = tensor_of(vv, {B, Tk, G, D});
    const Tensor qpt = int_tensor(qp, {Tq}), kpt = int_tensor(kp, {Tk});
    Tensor ot = Tensor::empty({B, Tq, H, D}), lt = Tensor::empty({B, H, Tq});
    ops::attention_block_forward(qt, kt, vt, qpt, kpt, ot, lt);
    Tensor dqt = tensor_of(dq0, {B, Tq, H, D}), dkt = tensor_of(dk0, {B, Tk, G, D}), dvt = tensor_of(dv0, {B, Tk, G, D});
    ops::attention_block_backward(tensor_of(dov, {B, Tq, H, D}), tensor_of(dlv, {B, H, Tq}), qt, kt, vt, qpt, kpt, ot, lt,
                                  dqt, dkt, dvt);
    CHECK(max_rel_error(doubles(out), values_of(ot)) < kTol);
    const Vec lse_want = values_of(lt);
    for (std::size_t r = 0; r < lse.size(); ++r) {
      INFO("row " << r << ": lse " << lse[r] << ", CPU op " << lse_want[r]);
      if (std::isinf(lse_want[r])) CHECK(lse[r] == lse_want[r]);
      else CHECK(std::fabs(lse[r] - lse_want[r]) < kTol * std::max(1.0, std::fabs(lse_want[r])));
    }
    CHECK(max_rel_error(doubles(dq), values_of(dqt)) < kTol);
    CHECK(max_rel_error(doubles(dk), values_of(dkt)) < kTol);
    CHECK(max_rel_error(doubles(dv), values_of(dvt)) < kTol);
    for (float x : out) REQUIRE(std::isfinite(x));
    for (float x : dq) REQUIRE(std::isfinite(x));
  }
}

TEST_CASE("CUDA bodies: AdamW's step per element equals the CPU optimizer's", "[ops][cuda-bodies]") {
  const std::int64_t n = 29;
  const std::vector<ParamInfo> infos = {};  // no decayed range: the decay is a separate scale pass on the GPU
  AdamWConfig cfg;
  cfg.lr = 1e-2;
  cfg.weight_decay = 0.0;
  const Vec wv = random_values(n, 18), gv1 = random_values(n, 19), gv2 = random_values(n, 20);
  Tensor w = tensor_of(wv, {n}, DType::f32, MemCategory::Parameter);
  AdamW opt(infos, cfg, 0, n, w);
  std::vector<float> wb = floats(wv), m(n, 0.0f), vs(n, 0.0f);
  int step = 0;
  for (const Vec* gv : {&gv1, &gv2}) {
    ++step;
    opt.step_range(w, tensor_of(*gv, {n}));
    const double bc1 = 1.0 - std::pow(cfg.beta1, step), bc2 = 1.0 - std::pow(cfg.beta2, step);
    const body::AdamWStep st{static_cast<float>(cfg.beta1), static_cast<float>(cfg.beta2), static_cast<float>(cfg.eps),
                             static_cast<float>(cfg.lr / bc1), static_cast<float>(std::sqrt(bc2))};
    for (std::int64_t i = 0; i < n; ++i) body::adamw(i, st, static_cast<float>((*gv)[i]), wb.data(), m.data(), vs.data());
  }
  // The same fp32 operations in the same order; only the compilers' FMA contraction may differ.
  CHECK(max_rel_error(doubles(wb), values_of(w)) < 1e-6);
}
