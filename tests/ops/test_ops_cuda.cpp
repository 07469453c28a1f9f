// Every op on CUDA tensors against the same op on the CPU (the reference), forward and backward,
// f32 and bf16, on shapes that are multiples of nothing (C = 300 spans two strides of a row
// block, T = 19 and V = 37 leave threads idle). Skipped cleanly without a CUDA device.
//
// Tolerances. f32: both sides compute in fp32 and differ only in summation order (cuBLAS's
// blocking vs OpenBLAS's, 256 strided partials vs 8 lanes) and expf vs the CPU's exp_approx
// (about 2 ulp): 1e-5 of the output's magnitude. bf16: the same fp32 results rounded to bf16,
// so where the fp32 values straddle a rounding boundary they land one bf16 step apart. bf16
// keeps 8 significant bits, so one step of a value v in [2^e, 2^(e+1)) is 2^(e-7): between 2^-8
// and 2^-7 of v, and at most 2^-7 of the largest magnitude (which the error is divided by). The
// bound is that step plus the fp32 differences: 2^-7 + 1e-5. (It was 2^-8, half a step for
// values at the bottom of their binade: on an H100, RMSNorm's dx differed by one step of such an
// element, 0.0045 of the magnitude.)
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "common/device.hpp"
#include "common/ops/ops.hpp"
#include "common/optim/adamw.hpp"
#include "tests/ops/op_reference.hpp"

using namespace usp;
using namespace usp::opstest;

namespace {

bool have_gpu() { return cuda_device_count() > 0; }
Tensor gpu(const Tensor& t) { return t.to(Device::cuda(0)); }
double tol(DType dt) { return dt == DType::f32 ? 1e-5 : std::ldexp(1.0, -7) + 1e-5; }

// The CPU result and the CUDA result (copied back) of the same op on the same values.
void check_same(const char* what, const Tensor& cpu, const Tensor& cuda, DType dt) {
  INFO(what << " (" << dtype_name(dt) << ")");
  REQUIRE(cuda.device().is_cuda());
  const Vec want = values_of(cpu), got = values_of(cuda.to(Device::cpu()));
  for (double x : got) REQUIRE(std::isfinite(x));
  CHECK(max_rel_error(got, want) < tol(dt));
}

Tensor rnd(const Shape& shape, std::uint64_t seed, DType dt, double lo = -1, double hi = 1) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return tensor_of(random_values(static_cast<std::size_t>(n), seed, lo, hi, dt), shape, dt);
}

}  // namespace

TEST_CASE("the bf16 bound admits one bf16 step of the largest value, wherever it sits in its binade", "[ops]") {
  // One step of v in [2^e, 2^(e+1)) is 2^(e-7). The bound divides by the largest magnitude, so the
  // worst case is the largest value itself one step off at the bottom of its binade: 2^-7 of it
  // (the H100's RMSNorm dx was such a case, 0.0045 of the magnitude, over the old 2^-8).
  for (const double top : {1.0, 1.0 + std::ldexp(1.0, -7), 1.5, 2.0 - std::ldexp(1.0, -7)}) {
    const double step = std::ldexp(1.0, -7);  // one bf16 step of every value in [1, 2)
    const Vec want = {top, 0.25, -0.5}, got = {top + step, 0.25, -0.5};
    INFO("largest value " << top << ", one step off");
    CHECK(bf16_ulps_apart(static_cast<float>(top), static_cast<float>(top + step)) == 1);
    CHECK(max_rel_error(got, want) < tol(DType::bf16));
    // Two steps are not rounding.
    CHECK_FALSE(max_rel_error({top + 2 * step, 0.25, -0.5}, want) < tol(DType::bf16));
  }
}

TEST_CASE("CUDA ops equal the CPU ops: matmul, RMSNorm, SwiGLU, embedding, element-wise", "[ops][gpu]") {
  if (!have_gpu()) {
    SUCCEED("no CUDA device");
    return;
  }
  for (DType dt : {DType::f32, DType::bf16}) {
    const std::int64_t n = 19, in = 300, out = 37, vocab = 23;
    // matmul
    const Tensor x = rnd({n, in}, 1, dt), w = rnd({out, in}, 2, dt), dy = rnd({n, out}, 3, dt);
    Tensor y = Tensor::empty({n, out}, dt), yg = gpu(y);
    ops::matmul_forward(x, w, y);
    ops::matmul_forward(gpu(x), gpu(w), yg);
    check_same("matmul y", y, yg, dt);
    Tensor dx = rnd({n, in}, 4, dt), dw = rnd({out, in}, 5, dt), dxg = gpu(dx), dwg = gpu(dw);
    ops::matmul_backward(dy, x, w, dx, dw, true);
    ops::matmul_backward(gpu(dy), gpu(x), gpu(w), dxg, dwg, true);
    check_same("matmul dx (accumulated)", dx, dxg, dt);
    check_same("matmul dw (accumulated)", dw, dwg, dt);
    // RMSNorm
    const Tensor wn = rnd({in}, 6, dt, 0.5, 1.5);
    Tensor yn = Tensor::empty({n, in}, dt), r = Tensor::empty({n}), yng = gpu(yn), rg = gpu(r);
    ops::rmsnorm_forward(x, wn, yn, r, 1e-5f);
    ops::rmsnorm_forward(gpu(x), gpu(wn), yng, rg, 1e-5f);
    check_same("rmsnorm y", yn, yng, dt);
    check_same("rmsnorm rstd", r, rg, DType::f32);
    Tensor dxn = rnd({n, in}, 7, dt), dwn = rnd({in}, 8, dt), dxng = gpu(dxn), dwng = gpu(dwn);
    const Tensor dyn = rnd({n, in}, 9, dt);
    ops::rmsnorm_backward(dyn, x, wn, r, dxn, dwn);
    ops::rmsnorm_backward(gpu(dyn), gpu(x), gpu(wn), rg, dxng, dwng);
    check_same("rmsnorm dx", dxn, dxng, dt);
    check_same("rmsnorm dw", dwn, dwng, dt);
    // SwiGLU
    const Tensor g = rnd({n, in}, 10, dt, -4, 4), u = rnd({n, in}, 11, dt);
    Tensor z = Tensor::empty({n, in}, dt), zg = gpu(z), dg = Tensor::empty({n, in}, dt), du = Tensor::empty({n, in}, dt);
    Tensor dgg = gpu(dg), dug = gpu(du);
    ops::swiglu_forward(g, u, z);
    ops::swiglu_forward(gpu(g), gpu(u), zg);
    ops::swiglu_backward(dyn, g, u, dg, du);
    ops::swiglu_backward(gpu(dyn), gpu(g), gpu(u), dgg, dug);
    check_same("swiglu z", z, zg, dt);
    check_same("swiglu dg", dg, dgg, dt);
    check_same("swiglu du", du, dug, dt);
    // embedding
    const Tensor tokens = int_tensor({3, 0, 22, 3, 7, 3, 1, 22, 5, 9, 9, 9, 0, 1, 2, 3, 4, 5, 6}, {n});
    const Tensor table = rnd({vocab, in}, 12, dt);
    Tensor e = Tensor::empty({n, in}, dt), eg = gpu(e), dtab = rnd({vocab, in}, 13, dt), dtabg = gpu(dtab);
    ops::embedding_forward(tokens, table, e);
    ops::embedding_forward(gpu(tokens), gpu(table), eg);
    ops::embedding_backward(tokens, dyn, dtab);
    ops::embedding_backward(gpu(tokens), gpu(dyn), dtabg);
    check_same("embedding out", e, eg, dt);
    check_same("embedding dtable", dtab, dtabg, dt);
    // add, scale
    Tensor a = rnd({n, in}, 14, dt), ag = gpu(a);
    ops::add_inplace(a, g);
    ops::add_inplace(ag, gpu(g));
    ops::scale_inplace(a, 0.37f);
    ops::scale_inplace(ag, 0.37f);
    check_same("add + scale", a, ag, dt);
  }
}

TEST_CASE("CUDA ops equal the CPU ops: RoPE, attention, cross-entropy", "[ops][gpu]") {
  if (!have_gpu()) {
    SUCCEED("no CUDA device");
    return;
  }
  for (DType dt : {DType::f32, DType::bf16}) {
    const std::int64_t b = 2, t = 19, h = 4, g = 2, d = 6, n = 5, v = 37;
    // RoPE, both directions, with and without positions
    const Tensor positions = int_tensor({4, 9, 1, 0, 30, 2, 2, 8, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, {t});
    for (bool with_pos : {false, true}) {
      Tensor x = rnd({b, t, h, d}, 20, dt), xg = gpu(x);
      ops::rope_forward(x, 10000.0, with_pos ? positions : Tensor());
      ops::rope_forward(xg, 10000.0, with_pos ? gpu(positions) : Tensor());
      check_same(with_pos ? "rope forward, positions" : "rope forward", x, xg, dt);
      ops::rope_backward(x, 500.0, with_pos ? positions : Tensor());
      ops::rope_backward(xg, 500.0, with_pos ? gpu(positions) : Tensor());
      check_same(with_pos ? "rope backward, positions" : "rope backward", x, xg, dt);
    }
    // attention with saved probabilities, and recomputed
    const Tensor q = rnd({b, t, h, d}, 21, dt, -2, 2), k = rnd({b, t, g, d}, 22, dt, -2, 2), vv = rnd({b, t, g, d}, 23, dt),
                 dout = rnd({b, t, h, d}, 24, dt);
    Tensor o = Tensor::empty({b, t, h, d}, dt), p = Tensor::empty({b, h, t, t}, dt), og = gpu(o), pg = gpu(p);
    ops::attention_forward(q, k, vv, o, p);
    ops::attention_forward(gpu(q), gpu(k), gpu(vv), og, pg);
    check_same("attention out", o, og, dt);
    check_same("attention probs", p, pg, dt);
    for (bool saved : {true, false}) {
      Tensor dq = Tensor::empty({b, t, h, d}, dt), dk = Tensor::empty({b, t, g, d}, dt), dv = Tensor::empty({b, t, g, d}, dt);
      Tensor dqg = gpu(dq), dkg = gpu(dk), dvg = gpu(dv);
      ops::attention_backward(dout, q, k, vv, saved ? p : Tensor(), dq, dk, dv);
      ops::attention_backward(gpu(dout), gpu(q), gpu(k), gpu(vv), saved ? pg : Tensor(), dqg, dkg, dvg);
      INFO((saved ? "saved probs" : "recomputed probs"));
      check_same("attention dq", dq, dqg, dt);
      check_same("attention dk", dk, dkg, dt);
      check_same("attention dv", dv, dvg, dt);
    }
    // cross-entropy, gradient in place as the LM head uses it
    const Tensor targets = int_tensor({0, 36, 17, 17, 5}, {n});
    const Tensor logits = rnd({n, v}, 25, dt, -6, 6);
    const double want = ops::cross_entropy_forward(logits, targets);
    Tensor lg = gpu(logits);
    const double got = ops::cross_entropy_forward(lg, targets.to(Device::cuda(0)));
    CHECK(std::fabs(got - want) < 1e-5 * std::fabs(want));
    Tensor dl = Tensor::empty({n, v}, dt);
    ops::cross_entropy_backward(logits, targets, dl, 4.0f);
    ops::cross_entropy_backward(lg, gpu(targets), lg, 4.0f);
    check_same("cross-entropy dlogits (in place)", dl, lg, dt);
  }
}

TEST_CASE("CUDA AdamW equals the CPU AdamW, fp32 and bf16 parameters with master weights", "[ops][gpu]") {
  if (!have_gpu()) {
    SUCCEED("no CUDA device");
    return;
  }
  for (DType dt : {DType::f32, DType::bf16}) {
    const std::int64_t n = 1000;
    const std::vector<ParamInfo> infos = {};
    AdamWConfig cfg;
    cfg.lr = 1e-2;
    Tensor w = rnd({n}, 30, dt), wg = gpu(w);
    AdamW cpu(infos, cfg, 0, n, w), cuda(infos, cfg, 0, n, wg);
    for (std::uint64_t s = 0; s < 3; ++s) {
      const Tensor grad = rnd({n}, 31 + s, dt);
      cpu.step_range(w, grad);
      cuda.step_range(wg, gpu(grad));
    }
    check_same("AdamW parameters after 3 steps", w, wg, dt);
  }
}

TEST_CASE("CUDA ops equal the CPU ops: attention over a block of keys at positions, with its lse", "[ops][gpu]") {
  if (!have_gpu()) {
    SUCCEED("no CUDA device");
    return;
  }
  // Queries at 6..10 against keys from 3 (partly visible) or 7 (query 6 sees none: lse -inf,
  // out 0); GQA; T and D multiples of nothing; dlse given (chapter 07's merge feeds one).
  for (DType dt : {DType::f32, DType::bf16})
    for (const std::int32_t first_key : {3, 7}) {
      INFO("keys from position " << first_key);
      const std::int64_t B = 2, Tq = 5, Tk = 9, H = 4, G = 2, D = 20;
      const std::vector<std::int32_t> qp = iota_positions(Tq, 6), kp = iota_positions(Tk, first_key);
      const Tensor q = rnd({B, Tq, H, D}, 51, dt), k = rnd({B, Tk, G, D}, 52, dt), v = rnd({B, Tk, G, D}, 53, dt);
      const Tensor qpos = int_tensor(qp, {Tq}), kpos = int_tensor(kp, {Tk});
      Tensor out = Tensor::empty({B, Tq, H, D}, dt), lse = Tensor::empty({B, H, Tq});
      Tensor outg = gpu(out), lseg = gpu(lse);
      ops::attention_block_forward(q, k, v, qpos, kpos, out, lse);
      ops::attention_block_forward(gpu(q), gpu(k), gpu(v), gpu(qpos), gpu(kpos), outg, lseg);
      check_same("attention block out", out, outg, dt);
      const Vec lw = values_of(lse), lg = values_of(lseg.to(Device::cpu()));
      for (std::size_t r = 0; r < lw.size(); ++r) {
        INFO("lse row " << r << ": CUDA " << lg[r] << ", CPU " << lw[r]);
        if (std::isinf(lw[r])) CHECK(lg[r] == lw[r]);
        else CHECK(std::fabs(lg[r] - lw[r]) < 1e-5 * std::max(1.0, std::fabs(lw[r])));  // fp32 both sides
      }
      const Tensor dout = rnd({B, Tq, H, D}, 54, dt), dlse = rnd({B, H, Tq}, 55, DType::f32);
      Tensor dq = rnd({B, Tq, H, D}, 56, dt), dk = rnd({B, Tk, G, D}, 57, dt), dv = rnd({B, Tk, G, D}, 58, dt);
      Tensor dqg = gpu(dq), dkg = gpu(dk), dvg = gpu(dv);
      ops::attention_block_backward(dout, dlse, q, k, v, qpos, kpos, out, lse, dq, dk, dv);
      // Both backwards from the CPU's out and lse (the forward's difference checked above).
      ops::attention_block_backward(gpu(dout), gpu(dlse), gpu(q), gpu(k), gpu(v), gpu(qpos), gpu(kpos), gpu(out),
                                    gpu(lse), dqg, dkg, dvg);
      check_same("attention block dq (accumulated)", dq, dqg, dt);
      check_same("attention block dk (accumulated)", dk, dkg, dt);
      check_same("attention block dv (accumulated)", dv, dvg, dt);
    }
}

TEST_CASE("an op's tensors must share one device", "[ops][gpu]") {
  if (!have_gpu()) {
    SUCCEED("no CUDA device");
    return;
  }
  Tensor x = Tensor::zeros({2, 3}), w = Tensor::zeros({4, 3}, DType::f32, MemCategory::Activation, Device::cuda());
  Tensor y = Tensor::zeros({2, 4});
  CHECK_THROWS_WITH(ops::matmul_forward(x, w, y),
                    Catch::Contains("ops::matmul_forward: arguments on different devices (cpu and cuda:0)"));
  // Positions on the host with tensors on the device are refused too.
  const Tensor q = Tensor::zeros({1, 2, 1, 2}, DType::f32, MemCategory::Activation, Device::cuda());
  const Tensor pos = Tensor::zeros({2}, DType::i32);
  Tensor out = Tensor::zeros({1, 2, 1, 2}, DType::f32, MemCategory::Activation, Device::cuda());
  Tensor lse = Tensor::zeros({1, 1, 2}, DType::f32, MemCategory::Activation, Device::cuda());
  CHECK_THROWS_WITH(ops::attention_block_forward(q, q, q, pos, pos, out, lse),
                    Catch::Contains("arguments on different devices"));
}
