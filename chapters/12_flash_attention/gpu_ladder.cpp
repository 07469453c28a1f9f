#include "chapters/12_flash_attention/gpu_ladder.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/device.hpp"
#include "common/device_timer.hpp"
#include "common/error.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "common/tensor.hpp"
#if defined(USP_HAVE_CUDA)
#include "kernels/attention/attention_rungs.hpp"
#endif

namespace usp::ch12 {

std::string gpu_ladder_csv(const LadderShape& s, const std::vector<RungRun>& runs) {
  std::ostringstream out;
  out << "rung,batch,seq,heads,kv_heads,head_dim,ms,tflops,error\n";
  for (const RungRun& r : runs)
    out << r.rung << ',' << s.batch << ',' << s.seq << ',' << s.heads << ',' << s.kv_heads << ',' << s.head_dim << ','
        << r.ms << ',' << r.tflops << ',' << r.error << '\n';
  return out.str();
}

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
  a.out = out.data<float>(), a.lse = lse.data<float>();
  attention::AttentionBackwardF32 g;
  g.f = a;
  g.dout = doutd.data<float>(), g.delta = delta.data<float>();
  g.dq = dq.data<float>(), g.dk = dk.data<float>(), g.dv = dv.data<float>();

  std::vector<RungRun> runs = {{"01 naive forward"}, {"02 flash forward"}, {"03 flash backward"}};
  const auto run_naive = [&] { attention::naive_forward(naive, S.data<float>()); };
  const auto run_forward = [&] { attention::flash_forward(a); };
  const auto run_backward = [&] { attention::flash_backward(g); };
  run_naive();
  run_forward();
  run_backward();
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
    runs[1].error = std::max(relative_error(out, ref_out), relative_error(lse, ref_lse));
    runs[2].error = std::max({relative_error(dq, rq), relative_error(dk, rk), relative_error(dv, rv)});
  }
  if (reps > 0) {
    const double forward_flops = 4.0 * static_cast<double>(B * H) * static_cast<double>(T) * static_cast<double>(T) *
                                 static_cast<double>(D) / 2.0;
    runs[0].ms = median_ms(run_naive, reps, gpu);
    runs[1].ms = median_ms(run_forward, reps, gpu);
    runs[2].ms = median_ms(run_backward, reps, gpu);
    runs[0].tflops = forward_flops / (runs[0].ms * 1e9);
    runs[1].tflops = forward_flops / (runs[1].ms * 1e9);
    runs[2].tflops = 2.5 * forward_flops / (runs[2].ms * 1e9);
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
