#include "chapters/12_flash_attention/gpu_ladder.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/device.hpp"
#include "common/device_timer.hpp"
#include "common/error.hpp"
#include "common/float_formats.hpp"
#include "common/numeric_compare.hpp"
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
  return Tensor::from_floats(rng::normal_values(11, name, shape_numel(shape)), shape);
}

// numeric_compare.hpp's relative error of two tensors; got is copied back from the device.
double relative_error(const Tensor& got, const Tensor& want) {
  return usp::relative_error(got.to_floats(), want.to_floats());
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

// The ladder's inputs on the host: q [B, T, H, D], k and v [B, T, G, D], dout [B, T, H, D], and
// the same rounded to bf16 (rungs 05 and 06).
struct LadderInputs {
  Tensor q, k, v, dout;
  Rounded q16, k16, v16, dout16;
};

LadderInputs make_inputs(const LadderShape& s) {
  const std::int64_t B = s.batch, T = s.seq, H = s.heads, G = s.kv_heads, D = s.head_dim;
  const Tensor q = random_tensor({B, T, H, D}, "ladder.q"), k = random_tensor({B, T, G, D}, "ladder.k"),
               v = random_tensor({B, T, G, D}, "ladder.v"), dout = random_tensor({B, T, H, D}, "ladder.dout");
  return {q, k, v, dout, round_to_bf16(q), round_to_bf16(k), round_to_bf16(v), round_to_bf16(dout)};
}

// What the rungs write on the device, each rung its own: out [B, T, H, D], lse [B, H, T], the
// gradients dq [B, T, H, D], dk and dv [B, T, G, D].
struct LadderOutputs {
  Tensor out_naive, lse_naive;  // rung 01
  Tensor out_fa1, lse_fa1;      // rung 02
  Tensor out, lse;              // rung 03
  Tensor dq, dk, dv;            // rung 04
  Tensor out_tc, lse_tc;        // rung 05
  Tensor dq_tc, dk_tc, dv_tc;   // rung 06
};

LadderOutputs make_outputs(const LadderShape& s, const Device& gpu) {
  const std::int64_t B = s.batch, T = s.seq, H = s.heads, G = s.kv_heads, D = s.head_dim;
  const auto empty = [&](const Shape& shape) { return Tensor::empty(shape, DType::f32, MemCategory::Temporary, gpu); };
  return {empty({B, T, H, D}), empty({B, H, T}), empty({B, T, H, D}), empty({B, H, T}),
          empty({B, T, H, D}), empty({B, H, T}), empty({B, T, H, D}), empty({B, T, G, D}),
          empty({B, T, G, D}), empty({B, T, H, D}), empty({B, H, T}), empty({B, T, H, D}),
          empty({B, T, G, D}), empty({B, T, G, D})};
}

// Each rung's error against the CPU's causal attention at positions 0..T-1 (out and lse, then
// the gradients); rungs 05 and 06 against the fp32 attention of the rounded inputs, so that what
// is left is their own bf16 P.
void check_rungs(std::vector<RungRun>& runs, const LadderInputs& in, const LadderOutputs& o) {
  const std::int64_t T = in.q.shape()[1];
  std::vector<std::int32_t> pos(static_cast<std::size_t>(T));
  for (std::int64_t i = 0; i < T; ++i) pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  Tensor positions = Tensor::empty({T}, DType::i32);
  std::copy(pos.begin(), pos.end(), positions.data<std::int32_t>());
  struct Reference {
    Tensor out, lse, dq, dk, dv;
  };
  const auto reference = [&](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout) {
    Reference r{Tensor::empty(q.shape()), Tensor::empty({q.shape()[0], q.shape()[2], T}), Tensor::empty(q.shape()),
                Tensor::empty(k.shape()), Tensor::empty(v.shape())};
    ops::attention_block_forward(q, k, v, positions, positions, r.out, r.lse);
    ops::attention_backward(dout, q, k, v, Tensor(), r.dq, r.dk, r.dv);
    return r;
  };
  const Reference ref = reference(in.q, in.k, in.v, in.dout);
  runs[0].error = relative_error(o.out_naive, ref.out);
  runs[1].error = std::max(relative_error(o.out_fa1, ref.out), relative_error(o.lse_fa1, ref.lse));
  runs[2].error = std::max(relative_error(o.out, ref.out), relative_error(o.lse, ref.lse));
  runs[3].error = std::max({relative_error(o.dq, ref.dq), relative_error(o.dk, ref.dk), relative_error(o.dv, ref.dv)});
  const Reference ref16 = reference(in.q16.values, in.k16.values, in.v16.values, in.dout16.values);
  runs[4].error = std::max(relative_error(o.out_tc, ref16.out), relative_error(o.lse_tc, ref16.lse));
  runs[5].error = std::max(
      {relative_error(o.dq_tc, ref16.dq), relative_error(o.dk_tc, ref16.dk), relative_error(o.dv_tc, ref16.dv)});
}

// Each rung's median time over reps runs and its TFLOPS (a backward counted as 2.5 forwards).
void time_rungs(std::vector<RungRun>& runs, const std::vector<std::function<void()>>& rung, int reps,
                const LadderShape& s, const Device& gpu) {
  const double B = s.batch, T = s.seq, H = s.heads, D = s.head_dim;
  const double forward_flops = 4.0 * B * H * T * T * D / 2.0;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    runs[r].ms = median_ms(rung[r], reps, gpu);
    const bool backward = r == 3 || r == 5;
    runs[r].tflops = (backward ? 2.5 : 1.0) * forward_flops / (runs[r].ms * 1e9);
  }
}

}  // namespace

std::vector<RungRun> run_gpu_ladder(const LadderShape& s, int reps, bool check) {
  USP_CHECK(gpu_ladder_available(), "the attention ladder needs a CUDA device");
  const Device gpu = Device::cuda(0);
  const std::int64_t B = s.batch, T = s.seq, H = s.heads, D = s.head_dim;
  const LadderInputs in = make_inputs(s);
  const Tensor qd = in.q.to(gpu), kd = in.k.to(gpu), vd = in.v.to(gpu), doutd = in.dout.to(gpu);
  const Tensor q16d = in.q16.bits.to(gpu), k16d = in.k16.bits.to(gpu), v16d = in.v16.bits.to(gpu),
               dout16d = in.dout16.bits.to(gpu);
  LadderOutputs o = make_outputs(s, gpu);
  Tensor S = Tensor::empty({B, H, T, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor delta = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);
  Tensor row_sum = Tensor::empty({B, H, T}, DType::f32, MemCategory::Temporary, gpu);  // rung 02's l

  attention::AttentionF32 a;
  a.B = s.batch, a.T = s.seq, a.H = s.heads, a.G = s.kv_heads, a.D = s.head_dim;
  a.causal = true;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  a.q = qd.data<float>(), a.k = kd.data<float>(), a.v = vd.data<float>();
  attention::AttentionF32 naive = a;
  naive.out = o.out_naive.data<float>(), naive.lse = o.lse_naive.data<float>();  // rung 01 writes its lse too
  attention::AttentionF32 fa1 = a;
  fa1.out = o.out_fa1.data<float>(), fa1.lse = o.lse_fa1.data<float>();
  attention::AttentionBf16 tc{a, q16d.data<std::uint16_t>(), k16d.data<std::uint16_t>(), v16d.data<std::uint16_t>()};
  tc.f.q = tc.f.k = tc.f.v = nullptr;
  tc.f.out = o.out_tc.data<float>(), tc.f.lse = o.lse_tc.data<float>();
  a.out = o.out.data<float>(), a.lse = o.lse.data<float>();
  const attention::AttentionBackwardBf16 tc_g{tc, dout16d.data<std::uint16_t>(), delta.data<float>(),
                                              o.dq_tc.data<float>(), o.dk_tc.data<float>(), o.dv_tc.data<float>()};
  attention::AttentionBackwardF32 g;
  g.f = a;
  g.dout = doutd.data<float>(), g.delta = delta.data<float>();
  g.dq = o.dq.data<float>(), g.dk = o.dk.data<float>(), g.dv = o.dv.data<float>();

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
  if (check) check_rungs(runs, in, o);
  if (reps > 0) time_rungs(runs, rung, reps, s, gpu);
  return runs;
}

#else

bool gpu_ladder_available() { return false; }
std::vector<RungRun> run_gpu_ladder(const LadderShape&, int, bool) {
  throw Error("the attention ladder needs a CUDA build");
}

#endif

}  // namespace usp::ch12
