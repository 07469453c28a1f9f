// Chapter 12's CUDA ladder without a GPU, and with one. The kernels' bodies (kernels/attention:
// naive_bodies.hpp, fa1_bodies.hpp, flash_bodies.hpp, flash_backward_bodies.hpp) run on the CPU
// through the emulation of their grids (attention_emulation.hpp) on shapes that are no multiple of the 64-row tiles (T = 100, 65),
// head dim 20 and 128, GQA, causal and not: out and lse against ops::attention_block_forward,
// dq, dk, dv against ops::attention_block_backward.
// [gpu]: the real kernels against the same reference; they skip with a warning without a GPU.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "common/device.hpp"
#include "common/float_formats.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "kernels/attention/attention_emulation.hpp"
#if defined(USP_HAVE_CUDA)
#include "kernels/attention/attention_rungs.hpp"
#endif

using namespace usp;
using namespace usp::attention;

namespace {

struct Case {
  int B, T, H, G, D;
  bool causal;
};

struct Reference {
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;
};

Reference reference(const Case& c) {
  const Shape qs{c.B, c.T, c.H, c.D}, ks{c.B, c.T, c.G, c.D};
  Reference r;
  for (auto [vec, shape, name] : {std::tuple{&r.q, qs, "q"}, std::tuple{&r.k, ks, "k"}, std::tuple{&r.v, ks, "v"},
                                  std::tuple{&r.dout, qs, "dout"}}) {
    vec->resize(static_cast<std::size_t>(shape[0] * shape[1] * shape[2] * shape[3]));
    for (std::size_t i = 0; i < vec->size(); ++i) (*vec)[i] = rng::normal(5, name, i);
  }
  Tensor qp = Tensor::empty({c.T}, DType::i32), kp = Tensor::empty({c.T}, DType::i32);
  for (int i = 0; i < c.T; ++i) qp.data<std::int32_t>()[i] = i, kp.data<std::int32_t>()[i] = c.causal ? i : 0;
  const Tensor q = Tensor::from_floats(r.q, qs), k = Tensor::from_floats(r.k, ks), v = Tensor::from_floats(r.v, ks);
  Tensor out = Tensor::empty(qs), lse = Tensor::empty({c.B, c.H, c.T});
  ops::attention_block_forward(q, k, v, qp, kp, out, lse);
  Tensor dq = Tensor::zeros(qs), dk = Tensor::zeros(ks), dv = Tensor::zeros(ks);
  ops::attention_block_backward(Tensor::from_floats(r.dout, qs), Tensor(), q, k, v, qp, kp, out, lse, dq, dk, dv);
  r.out = out.to_floats(), r.lse = lse.to_floats(), r.dq = dq.to_floats(), r.dk = dk.to_floats(), r.dv = dv.to_floats();
  return r;
}

AttentionF32 problem(const Case& c, const float* q, const float* k, const float* v, float* out, float* lse) {
  return {c.B, c.T, c.H, c.G, c.D, c.causal, 1.0f / std::sqrt(static_cast<float>(c.D)), q, k, v, out, lse};
}

// fp32 on both sides, sums in another order (tiles, the online rescaling): a few ulps of O(1).
void check_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > worst) worst = std::fabs(got[i] - want[i]), at = i;
  INFO(what << ": largest difference " << worst << " at element " << at << " (expected " << want[at] << ")");
  CHECK(worst <= 2e-5);
}

const Case kCases[] = {{2, 100, 4, 2, 20, true}, {2, 100, 4, 2, 20, false}, {1, 65, 2, 1, 128, true},
                       {1, 1, 2, 2, 8, true}};

}  // namespace

TEST_CASE("attention ladder on the CPU: the rungs' bodies over their grids equal the reference", "[ch12]") {
  for (const Case& c : kCases) {
    INFO("B " << c.B << " T " << c.T << " H " << c.H << " G " << c.G << " D " << c.D << (c.causal ? " causal" : " full"));
    const Reference r = reference(c);
    std::vector<float> out(r.out.size(), NAN), lse(r.lse.size(), NAN);
    std::vector<float> S(static_cast<std::size_t>(c.B) * c.H * c.T * c.T, NAN);
    emulate_naive_forward(problem(c, r.q.data(), r.k.data(), r.v.data(), out.data(), lse.data()), S.data());
    check_close(out, r.out, "rung 01 out");
    check_close(lse, r.lse, "rung 01 lse");
    std::fill(out.begin(), out.end(), NAN);
    std::fill(lse.begin(), lse.end(), NAN);
    std::vector<float> row_sum(r.lse.size(), NAN);
    emulate_fa1_forward(problem(c, r.q.data(), r.k.data(), r.v.data(), out.data(), lse.data()), row_sum.data());
    check_close(out, r.out, "rung 02 out");
    check_close(lse, r.lse, "rung 02 lse");
    std::fill(out.begin(), out.end(), NAN);
    std::fill(lse.begin(), lse.end(), NAN);
    emulate_flash_forward(problem(c, r.q.data(), r.k.data(), r.v.data(), out.data(), lse.data()));
    check_close(out, r.out, "rung 03 out");
    check_close(lse, r.lse, "rung 03 lse");
    // Rung 04 from the reference's out and lse.
    std::vector<float> dq(r.dq.size(), NAN), dk(r.dk.size(), NAN), dv(r.dv.size(), NAN), delta(r.lse.size(), NAN);
    const AttentionF32 f = problem(c, r.q.data(), r.k.data(), r.v.data(), const_cast<float*>(r.out.data()),
                                   const_cast<float*>(r.lse.data()));
    emulate_flash_backward({f, r.dout.data(), delta.data(), dq.data(), dk.data(), dv.data()});
    check_close(dq, r.dq, "rung 04 dq");
    check_close(dk, r.dk, "rung 04 dk");
    check_close(dv, r.dv, "rung 04 dv");
  }
}

// Rung 05 takes bf16 q, k, v: the reference is the fp32 attention of the same bf16 values (their
// products are exact in fp32). What differs: P is rounded to bf16 before P·v, a relative error of
// at most 2^-9 per weight, and the weights sum to 1, so |Δout| <= 2^-9·max|v|; the bound is twice
// that for the fp32 sums in another order and l summed from the unrounded p. lse sees no bf16
// rounding: fp32 tolerance, as above.
struct Bf16Problem {
  Case c;
  std::vector<std::uint16_t> q, k, v, dout;
  Reference r;  // of the rounded values
  float max_v = 0;
};

Bf16Problem bf16_problem(const Case& c) {
  Bf16Problem p{c, {}, {}, {}, {}, reference(c), 0};
  const auto round = [](std::vector<float>& x, std::vector<std::uint16_t>& bits) {
    bits.resize(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) bits[i] = float_to_bf16(x[i]), x[i] = bf16_to_float(bits[i]);
  };
  Reference rounded = p.r;
  round(rounded.q, p.q), round(rounded.k, p.k), round(rounded.v, p.v), round(rounded.dout, p.dout);
  const Shape qs{c.B, c.T, c.H, c.D}, ks{c.B, c.T, c.G, c.D};
  Tensor qp = Tensor::empty({c.T}, DType::i32), kp = Tensor::empty({c.T}, DType::i32);
  for (int i = 0; i < c.T; ++i) qp.data<std::int32_t>()[i] = i, kp.data<std::int32_t>()[i] = c.causal ? i : 0;
  Tensor out = Tensor::empty(qs), lse = Tensor::empty({c.B, c.H, c.T});
  const Tensor q = Tensor::from_floats(rounded.q, qs), k = Tensor::from_floats(rounded.k, ks),
               v = Tensor::from_floats(rounded.v, ks);
  ops::attention_block_forward(q, k, v, qp, kp, out, lse);
  Tensor dq = Tensor::zeros(qs), dk = Tensor::zeros(ks), dv = Tensor::zeros(ks);
  ops::attention_block_backward(Tensor::from_floats(rounded.dout, qs), Tensor(), q, k, v, qp, kp, out, lse, dq, dk, dv);
  p.r.out = out.to_floats(), p.r.lse = lse.to_floats();
  p.r.dq = dq.to_floats(), p.r.dk = dk.to_floats(), p.r.dv = dv.to_floats();
  for (float x : rounded.v) p.max_v = std::max(p.max_v, std::fabs(x));
  return p;
}

void check_within(const std::vector<float>& got, const std::vector<float>& want, double bound, const char* what) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= worst)) worst = std::fabs(got[i] - want[i]), at = i;  // NaN lands here
  INFO(what << ": largest difference " << worst << " at element " << at << " (expected " << want[at] << ", got "
            << got[at] << ", bound " << bound << ")");
  CHECK(worst <= bound);
}

const Case kTcCases[] = {{1, 100, 4, 2, 64, true}, {1, 100, 2, 1, 64, false}, {1, 65, 2, 2, 128, true}};

TEST_CASE("attention rung 05 on the CPU: the tensor-core kernel's own body on 128 host threads", "[ch12]") {
  for (const Case& c : kTcCases) {
    INFO("B " << c.B << " T " << c.T << " H " << c.H << " G " << c.G << " D " << c.D << (c.causal ? " causal" : " full"));
    const Bf16Problem p = bf16_problem(c);
    std::vector<float> out(p.r.out.size(), NAN), lse(p.r.lse.size(), NAN);
    AttentionBf16 a{problem(c, nullptr, nullptr, nullptr, out.data(), lse.data()), p.q.data(), p.k.data(), p.v.data()};
    emulate_flash_forward_bf16_tc(a);
    check_within(out, p.r.out, std::ldexp(p.max_v, -8), "rung 05 out");
    check_within(lse, p.r.lse, 2e-5, "rung 05 lse");
  }
}

// Rung 06 against the fp32 backward of the same bf16 values (out and lse from the reference's
// forward). P and dS are rounded to bf16 (2^-9 relative each) before three of the five products;
// the gradients are sums of terms of both signs, so no bound relative to the result follows from
// that alone: 2^-6 of each gradient's largest value is eight times one term's rounding, and an
// indexing or masking error is O(1). Measured on the CPU: at most 2.5e-3 of the largest (dq and
// dk), 1.5e-3 (dv).
float largest(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

AttentionBackwardBf16 backward_problem(const Bf16Problem& p, const float* out, const float* lse, float* delta, float* dq,
                                       float* dk, float* dv, const std::uint16_t* q, const std::uint16_t* k,
                                       const std::uint16_t* v, const std::uint16_t* dout) {
  AttentionBf16 f{problem(p.c, nullptr, nullptr, nullptr, const_cast<float*>(out), const_cast<float*>(lse)), q, k, v};
  return {f, dout, delta, dq, dk, dv};
}

void check_tc_gradients(const std::vector<float>& dq, const std::vector<float>& dk, const std::vector<float>& dv,
                        const Reference& r) {
  UNSCOPED_INFO("largest |dq|, |dk|, |dv|: " << largest(r.dq) << ", " << largest(r.dk) << ", " << largest(r.dv));
  check_within(dq, r.dq, std::ldexp(largest(r.dq), -6), "rung 06 dq");
  check_within(dk, r.dk, std::ldexp(largest(r.dk), -6), "rung 06 dk");
  check_within(dv, r.dv, std::ldexp(largest(r.dv), -6), "rung 06 dv");
}

// GQA with a causal mask over two key tiles, a full mask over a 65-token tail, D 128 with GQA.
const Case kTcBackwardCases[] = {{1, 100, 2, 1, 64, true}, {1, 65, 1, 1, 64, false}, {1, 65, 2, 1, 128, true}};

TEST_CASE("attention rung 06 on the CPU: the tensor-core backward's own body on 128 host threads", "[ch12]") {
  for (const Case& c : kTcBackwardCases) {
    INFO("B " << c.B << " T " << c.T << " H " << c.H << " G " << c.G << " D " << c.D << (c.causal ? " causal" : " full"));
    const Bf16Problem p = bf16_problem(c);
    std::vector<float> dq(p.r.dq.size(), NAN), dk(p.r.dk.size(), NAN), dv(p.r.dv.size(), NAN), delta(p.r.lse.size(), NAN);
    emulate_flash_backward_bf16_tc(backward_problem(p, p.r.out.data(), p.r.lse.data(), delta.data(), dq.data(), dk.data(),
                                                    dv.data(), p.q.data(), p.k.data(), p.v.data(), p.dout.data()));
    check_tc_gradients(dq, dk, dv, p.r);
  }
}

TEST_CASE("attention ladder on the GPU: every rung equals the reference", "[ch12][gpu]") {
  if (cuda_device_count() == 0) {
    WARN("no CUDA device: skipped");
    return;
  }
#if defined(USP_HAVE_CUDA)
  const Device gpu = Device::cuda(0);
  for (const Case& c : kCases) {
    INFO("B " << c.B << " T " << c.T << " D " << c.D << (c.causal ? " causal" : " full"));
    const Reference r = reference(c);
    const auto up = [&](const std::vector<float>& v) {
      return Tensor::from_floats(v, {static_cast<std::int64_t>(v.size())}).to(gpu, MemCategory::Temporary);
    };
    const Tensor q = up(r.q), k = up(r.k), v = up(r.v);
    Tensor out = up(std::vector<float>(r.out.size(), NAN)), lse = up(std::vector<float>(r.lse.size(), NAN));
    Tensor S = Tensor::empty({static_cast<std::int64_t>(c.B) * c.H * c.T * c.T}, DType::f32, MemCategory::Temporary, gpu);
    const AttentionF32 a = problem(c, q.data<float>(), k.data<float>(), v.data<float>(), out.data<float>(), lse.data<float>());
    naive_forward(a, S.data<float>());
    check_close(out.to(Device::cpu()).to_floats(), r.out, "rung 01 out");
    check_close(lse.to(Device::cpu()).to_floats(), r.lse, "rung 01 lse");
    Tensor row_sum = up(std::vector<float>(r.lse.size(), NAN));
    fa1_forward(a, row_sum.data<float>());
    check_close(out.to(Device::cpu()).to_floats(), r.out, "rung 02 out");
    check_close(lse.to(Device::cpu()).to_floats(), r.lse, "rung 02 lse");
    flash_forward(a);
    check_close(out.to(Device::cpu()).to_floats(), r.out, "rung 03 out");
    check_close(lse.to(Device::cpu()).to_floats(), r.lse, "rung 03 lse");
    const Tensor dout = up(r.dout);
    Tensor dq = up(std::vector<float>(r.dq.size(), NAN)), dk = up(std::vector<float>(r.dk.size(), NAN));
    Tensor dv = up(std::vector<float>(r.dv.size(), NAN)), delta = up(std::vector<float>(r.lse.size(), NAN));
    flash_backward({a, dout.data<float>(), delta.data<float>(), dq.data<float>(), dk.data<float>(), dv.data<float>()});
    check_close(dq.to(Device::cpu()).to_floats(), r.dq, "rung 04 dq");
    check_close(dk.to(Device::cpu()).to_floats(), r.dk, "rung 04 dk");
    check_close(dv.to(Device::cpu()).to_floats(), r.dv, "rung 04 dv");
  }
#endif
}

TEST_CASE("attention rungs 05 and 06 on the GPU: the tensor-core kernels equal the reference", "[ch12][gpu]") {
  if (cuda_device_count() == 0) {
    WARN("no CUDA device: skipped");
    return;
  }
#if defined(USP_HAVE_CUDA)
  const Device gpu = Device::cuda(0);
  for (const Case& c : kTcCases) {
    INFO("B " << c.B << " T " << c.T << " H " << c.H << " G " << c.G << " D " << c.D << (c.causal ? " causal" : " full"));
    const Bf16Problem p = bf16_problem(c);
    const auto up = [&](const std::vector<std::uint16_t>& bits) {
      Tensor t = Tensor::empty({static_cast<std::int64_t>(bits.size())}, DType::bf16);
      std::copy(bits.begin(), bits.end(), t.data<std::uint16_t>());
      return t.to(gpu, MemCategory::Temporary);
    };
    const Tensor q = up(p.q), k = up(p.k), v = up(p.v);
    Tensor out = Tensor::from_floats(std::vector<float>(p.r.out.size(), NAN), {static_cast<std::int64_t>(p.r.out.size())})
                     .to(gpu, MemCategory::Temporary);
    Tensor lse = Tensor::from_floats(std::vector<float>(p.r.lse.size(), NAN), {static_cast<std::int64_t>(p.r.lse.size())})
                     .to(gpu, MemCategory::Temporary);
    const AttentionBf16 a{problem(c, nullptr, nullptr, nullptr, out.data<float>(), lse.data<float>()),
                          q.data<std::uint16_t>(), k.data<std::uint16_t>(), v.data<std::uint16_t>()};
    flash_forward_bf16_tc(a);
    check_within(out.to(Device::cpu()).to_floats(), p.r.out, std::ldexp(p.max_v, -8), "rung 05 out");
    check_within(lse.to(Device::cpu()).to_floats(), p.r.lse, 2e-5, "rung 05 lse");
    // Rung 06 from the reference's out and lse.
    const auto floats_up = [&](const std::vector<float>& x) {
      return Tensor::from_floats(x, {static_cast<std::int64_t>(x.size())}).to(gpu, MemCategory::Temporary);
    };
    const Tensor ref_out = floats_up(p.r.out), ref_lse = floats_up(p.r.lse), dout = up(p.dout);
    Tensor delta = floats_up(std::vector<float>(p.r.lse.size(), NAN)), dq = floats_up(std::vector<float>(p.r.dq.size(), NAN));
    Tensor dk = floats_up(std::vector<float>(p.r.dk.size(), NAN)), dv = floats_up(std::vector<float>(p.r.dv.size(), NAN));
    flash_backward_bf16_tc(backward_problem(p, ref_out.data<float>(), ref_lse.data<float>(), delta.data<float>(),
                                            dq.data<float>(), dk.data<float>(), dv.data<float>(), q.data<std::uint16_t>(),
                                            k.data<std::uint16_t>(), v.data<std::uint16_t>(), dout.data<std::uint16_t>()));
    check_tc_gradients(dq.to(Device::cpu()).to_floats(), dk.to(Device::cpu()).to_floats(),
                       dv.to(Device::cpu()).to_floats(), p.r);
  }
#endif
}
