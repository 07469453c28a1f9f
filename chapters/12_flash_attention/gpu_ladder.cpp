#include "chapters/12_flash_attention/gpu_ladder.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/device.hpp"
#include "common/device_timer.hpp"
#include "common/error.hpp"
#include "common/float_formats.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "common/tensor.hpp"
#if defined(USP_HAVE_CUDA)
#include "kernels/attention/attention_rungs.hpp"
#endif

namespace usp::ch12 {

#if defined(USP_HAVE_CUDA)

bool gpu_ladder_available() { return cuda_device_count() > 0; }

namespace {

Tensor random_tensor(const Shape& shape, const char* name) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  const auto key = rng::make_key(11, rng::hash_name(name));
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = rng::normal(key, static_cast<std::uint64_t>(i));
  return Tensor::from_floats(v, shape);
}

// Largest |got - want| over max |want|; got is copied back from the device.
double relative_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_floats(), w = want.to_floats();
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(w[i])));
    worst = std::max(worst, static_cast<double>(std::fabs(g[i] - w[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

// The same values rounded to bf16: the bits (for rung 05) and the rounded floats (its reference).
struct Rounded {
  Tensor bits, values;
};
Rounded round_to_bf16(const Tensor& x) {
  std::vector<float> v = x.to_floats();
  Rounded r{Tensor::empty(x.shape(), DType::bf16), Tensor()};
  std::uint16_t* bits = r.bits.data<std::uint16_t>();
  for (std::size_t i = 0; i < v.size(); ++i) bits[i] = float_to_bf16(v[i]), v[i] = bf16_to_float(bits[i]);
  r.values = Tensor::from_floats(v, x.shape());
  return r;
}

}  // namespace

std::vector<RungRun> run_gpu_ladder(const LadderShape& s, int reps, bool check) {
  USP_CHECK(gpu_ladder_available(), "the attention ladder needs a CUDA device");
  const Device gpu = Device::cuda(0);
  const std::int64_t B = s.batch, T = s.seq, H = s.heads, G = s.kv_heads, D = s.head_dim;
  const Tensor q = random_tensor({B, T, H, D}, "ladder.q"), k = random_tensor({B, T, G, D}, "ladder.k"),
               v = random_tensor({B, T, G, D}, "ladder.v"), dout = random_tensor({B, T, H, D}, "ladder.dout");
  const Tensor qd = q.to(gpu), kd = k.to(gpu), vd = v.to(gpu), doutd = dout.to(gpu);
  Tensor out_naive = Tensor::empty({B, T, H, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor out = Tensor::empty({B, T, H, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor lse = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor lse_naive = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor S = Tensor::empty({B, H, T, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor delta = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor row_sum = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);  // rung 02's l
  const Rounded q16 = round_to_bf16(q), k16 = round_to_bf16(k), v16 = round_to_bf16(v), dout16 = round_to_bf16(dout);
  const Tensor q16d = q16.bits.to(gpu), k16d = k16.bits.to(gpu), v16d = v16.bits.to(gpu), dout16d = dout16.bits.to(gpu);
  Tensor dq_tc = Tensor::empty({B, T, H, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor dk_tc = Tensor::empty({B, T, G, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor dv_tc = Tensor::empty({B, T, G, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor out_fa1 = Tensor::empty({B, T, H, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor lse_fa1 = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor out_tc = Tensor::empty({B, T, H, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor lse_tc = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor dq = Tensor::empty({B, T, H, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor dk = Tensor::empty({B, T, G, D}, DType::f32, MemCategory::Temporary, gpu);
  Tensor dv = Tensor::empty({B, T, G, D}, DType::f32, MemCategory::Temporary, gpu);

  attention::AttentionF32 a;
  a.B = s.batch, a.T = s.seq, a.H = s.heads, a.G = s.kv_heads, a.D = s.head_dim;
  a.causal = true;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  a.q = qd.data<float>(), a.k = kd.data<float>(), a.v = vd.data<float>();
  attention::AttentionF32 naive = a;
  naive.out = out_naive.data<float>(), naive.lse = lse_naive.data<float>();  // rung 01 writes its lse too
  attention::AttentionF32 fa1 = a;
  fa1.out = out_fa1.data<float>(), fa1.lse = lse_fa1.data<float>();
  attention::AttentionBf16 tc{a, q16d.data<std::uint16_t>(), k16d.data<std::uint16_t>(), v16d.data<std::uint16_t>()};
  tc.f.q = tc.f.k = tc.f.v = nullptr;
  tc.f.out = out_tc.data<float>(), tc.f.lse = lse_tc.data<float>();
  a.out = out.data<float>(), a.lse = lse.data<float>();
  const attention::AttentionBackwardBf16 tc_g{tc, dout16d.data<std::uint16_t>(), delta.data<float>(),
                                              dq_tc.data<float>(), dk_tc.data<float>(), dv_tc.data<float>()};
  attention::AttentionBackwardF32 g;
  g.f = a;
  g.dout = doutd.data<float>(), g.delta = delta.data<float>();
  g.dq = dq.data<float>(), g.dk = dk.data<float>(), g.dv = dv.data<float>();

  std::vector<RungRun> runs = {{"01 naive forward"},
                               {"02 fa1 forward"},
                               {"03 fa2 forward"},
                               {"04 fa2 backward"},
                               {"05 fa2 forward bf16 tensor cores"},
                               {"06 fa2 backward bf16 tensor cores"}};
  const std::vector<std::function<void()>> rung = {
      [&] { attention::naive_forward(naive, S.data<float>()); },
      [&] { attention::fa1_forward(fa1, row_sum.data<float>()); },
      [&] { attention::flash_forward(a); },
      [&] { attention::flash_backward(g); },  // from rung 03's out and lse
      [&] { attention::flash_forward_bf16_tc(tc); },
      [&] { attention::flash_backward_bf16_tc(tc_g); }};  // from rung 05's out and lse
  for (const auto& run : rung) run();
  if (check) {
    // The CPU's causal attention at positions 0..T-1: out and lse, then the gradients.
    std::vector<std::int32_t> pos(static_cast<std::size_t>(T));
    for (std::int64_t i = 0; i < T; ++i) pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    Tensor positions = Tensor::empty({T}, DType::i32);
    std::copy(pos.begin(), pos.end(), positions.data<std::int32_t>());
    Tensor ref_out = Tensor::empty({B, T, H, D}), ref_lse = Tensor::empty({B, H, T});
    ops::attention_block_forward(q, k, v, positions, positions, ref_out, ref_lse);
    Tensor rq = Tensor::empty({B, T, H, D}), rk = Tensor::empty({B, T, G, D}), rv = Tensor::empty({B, T, G, D});
    ops::attention_backward(dout, q, k, v, Tensor(), rq, rk, rv);
    runs[0].error = relative_error(out_naive, ref_out);
    runs[1].error = std::max(relative_error(out_fa1, ref_out), relative_error(lse_fa1, ref_lse));
    runs[2].error = std::max(relative_error(out, ref_out), relative_error(lse, ref_lse));
    runs[3].error = std::max({relative_error(dq, rq), relative_error(dk, rk), relative_error(dv, rv)});
    // Rung 05 against the fp32 attention of the rounded inputs: what is left is its own bf16 P.
    Tensor ref16_out = Tensor::empty({B, T, H, D}), ref16_lse = Tensor::empty({B, H, T});
    ops::attention_block_forward(q16.values, k16.values, v16.values, positions, positions, ref16_out, ref16_lse);
    runs[4].error = std::max(relative_error(out_tc, ref16_out), relative_error(lse_tc, ref16_lse));
    Tensor rq16 = Tensor::empty({B, T, H, D}), rk16 = Tensor::empty({B, T, G, D}), rv16 = Tensor::empty({B, T, G, D});
    ops::attention_backward(dout16.values, q16.values, k16.values, v16.values, Tensor(), rq16, rk16, rv16);
    runs[5].error = std::max({relative_error(dq_tc, rq16), relative_error(dk_tc, rk16), relative_error(dv_tc, rv16)});
  }
  if (reps > 0) {
    const double forward_flops = 4.0 * static_cast<double>(B * H) * static_cast<double>(T) * static_cast<double>(T) *
                                 static_cast<double>(D) / 2.0;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      runs[r].ms = median_ms(rung[r], reps, gpu);
      const bool backward = r == 3 || r == 5;
      runs[r].tflops = (backward ? 2.5 : 1.0) * forward_flops / (runs[r].ms * 1e9);
    }
  }
  return runs;
}

#else

bool gpu_ladder_available() { return false; }
std::vector<RungRun> run_gpu_ladder(const LadderShape&, int, bool) {
  throw Error("the attention ladder needs a CUDA build");
}

#endif

}  // namespace usp::ch12
