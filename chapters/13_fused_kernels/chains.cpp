// The chains and their variants. Each pass lists exactly the tensors its lambda touches (the
// tests check it); the lambdas capture raw pointers into tensors the Chain or its Variant owns.
#include "chapters/13_fused_kernels/chains.hpp"

#include <cmath>
#include <cstring>
#include <memory>

#include "chapters/13_fused_kernels/fused_kernels.hpp"
#include "chapters/13_fused_kernels/fused_residual_norm.hpp"
#include "chapters/13_fused_kernels/unfused_kernels.hpp"
#include "common/error.hpp"
#include "common/ops/ops.hpp"
#include "common/optim/adamw.hpp"
#include "common/rng.hpp"

namespace usp::ch13 {

namespace {

constexpr std::uint64_t kSeed = 13;
constexpr float kEps = 1e-5f;

Tensor random(const Shape& shape, const char* name, float scale = 1.0f, float offset = 0.0f) {
  Tensor t = Tensor::empty(shape, DType::f32, MemCategory::Activation);
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    p[i] = offset + scale * rng::normal(kSeed, name, static_cast<std::uint64_t>(i));
  return t;
}

Tensor output(const Shape& shape) { return Tensor::zeros(shape, DType::f32, MemCategory::Activation); }
Tensor scratch(const Shape& shape) { return Tensor::empty(shape, DType::f32, MemCategory::Temporary); }

float* f(const Tensor& t) { return t.data<float>(); }

// reset() for tensors that start from given values: copies of them, restored before each run.
std::function<void()> restore(std::vector<Tensor> tensors) {
  auto saved = std::make_shared<std::vector<Tensor>>();
  for (const Tensor& t : tensors) saved->push_back(t.clone(MemCategory::Temporary));
  return [tensors, saved] {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      Tensor t = tensors[i];
      t.copy_from((*saved)[i]);
    }
  };
}

}  // namespace

Chain residual_norm_forward_chain(std::int64_t N, std::int64_t C) {
  Chain ch;
  ch.name = "residual + RMSNorm forward";
  ch.id = "norm_fwd";
  const Tensor x = random({N, C}, "x"), r = random({N, C}, "r"), w = random({C}, "w", 0.1f, 1.0f);
  const Tensor x2 = output({N, C}), h = output({N, C}), rstd = output({N});
  ch.inputs = {x, r, w};
  ch.outputs = {x2, h, rstd};
  ch.reset = [] {};

  Variant un{"unfused", {}, {}};
  const Tensor sq = scratch({N, C}), ms = scratch({N}), t = scratch({N, C});
  un.scratch = {sq, ms, t};
  un.passes = {
      {"add", {x, r}, {x2}, [=] { unfused::add(f(x), f(r), f(x2), N * C); }},
      {"square", {x2}, {sq}, [=] { unfused::square(f(x2), f(sq), N * C); }},
      {"row_mean", {sq}, {ms}, [=] { unfused::row_mean(f(sq), f(ms), N, C); }},
      {"rsqrt", {ms}, {rstd}, [=] { unfused::rsqrt_eps(f(ms), f(rstd), kEps, N); }},
      {"mul_rows", {x2, rstd}, {t}, [=] { unfused::mul_rows(f(x2), f(rstd), f(t), N, C); }},
      {"mul_cols", {t, w}, {h}, [=] { unfused::mul_cols(f(t), f(w), f(h), N, C); }},
  };
  Variant core{"core ops", {}, {}};
  core.passes = {
      {"add", {x, r}, {x2}, [=] { unfused::add(f(x), f(r), f(x2), N * C); }},
      {"ops::rmsnorm_forward", {x2, w}, {h, rstd}, [=] {
         Tensor hv = h, rv = rstd;
         ops::rmsnorm_forward(x2, w, hv, rv, kEps);
       }},
  };
  Variant fu{"fused", {}, {}};
  fu.passes = {{"residual_rmsnorm", {x, r, w}, {x2, h, rstd},
                [=] { residual_rmsnorm_forward(f(x), f(r), f(w), kEps, N, C, f(x2), f(h), f(rstd)); }}};
  ch.variants = {un, core, fu};
  return ch;
}

Chain residual_norm_backward_chain(std::int64_t N, std::int64_t C) {
  Chain ch;
  ch.name = "residual + RMSNorm backward";
  ch.id = "norm_bwd";
  const Tensor dh = random({N, C}, "dh"), x2 = random({N, C}, "x2"), w = random({C}, "w", 0.1f, 1.0f);
  const Tensor rstd = random({N}, "rstd", 0.05f, 1.0f);
  const Tensor dx = random({N, C}, "dx_stream"), dw = random({C}, "dw_before");  // accumulate into given values
  ch.inputs = {dh, x2, w, rstd};
  ch.outputs = {dx, dw};
  ch.reset = restore({dx, dw});

  Variant un{"unfused", {}, {}};
  const Tensor g = scratch({N, C}), gx = scratch({N, C}), d = scratch({N}), t = scratch({N, C});
  un.scratch = {g, gx, d, t};
  un.passes = {
      {"mul_cols", {dh, w}, {g}, [=] { unfused::mul_cols(f(dh), f(w), f(g), N, C); }},
      {"mul", {g, x2}, {gx}, [=] { unfused::mul(f(g), f(x2), f(gx), N * C); }},
      {"row_mean", {gx}, {d}, [=] { unfused::row_mean(f(gx), f(d), N, C); }},
      {"rmsnorm_grad", {g, x2, rstd, d}, {t}, [=] { unfused::rmsnorm_grad(f(g), f(x2), f(rstd), f(d), f(t), N, C); }},
      {"add_inplace", {dx, t}, {dx}, [=] { unfused::add_inplace(f(dx), f(t), N * C); }},
      {"col_sum_scaled", {dh, x2, rstd, dw}, {dw}, [=] { unfused::col_sum_scaled(f(dh), f(x2), f(rstd), f(dw), N, C); }},
  };
  Variant core{"core ops", {}, {}};
  core.passes = {{"ops::rmsnorm_backward", {dh, x2, w, rstd, dx, dw}, {dx, dw}, [=] {
                    Tensor dxv = dx, dwv = dw;
                    ops::rmsnorm_backward(dh, x2, w, rstd, dxv, dwv);
                  }}};
  Variant fu{"fused", {}, {}};
  fu.passes = {{"residual_rmsnorm_backward", {dh, x2, w, rstd, dx, dw}, {dx, dw},
                [=] { residual_rmsnorm_backward(f(dh), f(x2), f(w), f(rstd), N, C, f(dx), f(dw)); }}};
  ch.variants = {un, core, fu};
  return ch;
}

Chain swiglu_forward_chain(std::int64_t N, std::int64_t F) {
  Chain ch;
  ch.name = "SwiGLU forward";
  ch.id = "swiglu_fwd";
  const Tensor g = random({N, F}, "g"), u = random({N, F}, "u"), z = output({N, F});
  const std::int64_t n = N * F;
  ch.inputs = {g, u};
  ch.outputs = {z};
  ch.reset = [] {};
  Variant un{"unfused", {}, {}};
  const Tensor s = scratch({N, F}), a = scratch({N, F});
  un.scratch = {s, a};
  un.passes = {
      {"sigmoid", {g}, {s}, [=] { unfused::sigmoid(f(g), f(s), n); }},
      {"mul", {g, s}, {a}, [=] { unfused::mul(f(g), f(s), f(a), n); }},
      {"mul", {a, u}, {z}, [=] { unfused::mul(f(a), f(u), f(z), n); }},
  };
  // The core's op is already the fused kernel: one pass, the sigmoid kept in a register.
  Variant fu{"fused", {}, {}};
  fu.passes = {{"ops::swiglu_forward", {g, u}, {z}, [=] {
                  Tensor zv = z;
                  ops::swiglu_forward(g, u, zv);
                }}};
  ch.variants = {un, fu};
  return ch;
}

Chain swiglu_backward_chain(std::int64_t N, std::int64_t F) {
  Chain ch;
  ch.name = "SwiGLU backward";
  ch.id = "swiglu_bwd";
  const Tensor dz = random({N, F}, "dz"), g = random({N, F}, "g"), u = random({N, F}, "u");
  const Tensor dg = output({N, F}), du = output({N, F});
  const std::int64_t n = N * F;
  ch.inputs = {dz, g, u};
  ch.outputs = {dg, du};
  ch.reset = [] {};
  Variant un{"unfused", {}, {}};
  const Tensor s = scratch({N, F}), a = scratch({N, F}), da = scratch({N, F}), ds = scratch({N, F});
  un.scratch = {s, a, da, ds};
  un.passes = {
      {"sigmoid", {g}, {s}, [=] { unfused::sigmoid(f(g), f(s), n); }},
      {"mul", {g, s}, {a}, [=] { unfused::mul(f(g), f(s), f(a), n); }},
      {"mul", {dz, a}, {du}, [=] { unfused::mul(f(dz), f(a), f(du), n); }},
      {"mul", {dz, u}, {da}, [=] { unfused::mul(f(dz), f(u), f(da), n); }},
      {"silu_grad", {s, g}, {ds}, [=] { unfused::silu_grad(f(s), f(g), f(ds), n); }},
      {"mul", {da, ds}, {dg}, [=] { unfused::mul(f(da), f(ds), f(dg), n); }},
  };
  // The core's op is already the fused kernel: the sigmoid recomputed, not read back.
  Variant fu{"fused", {}, {}};
  fu.passes = {{"ops::swiglu_backward", {dz, g, u}, {dg, du}, [=] {
                  Tensor dgv = dg, duv = du;
                  ops::swiglu_backward(dz, g, u, dgv, duv);
                }}};
  ch.variants = {un, fu};
  return ch;
}

Chain softmax_cross_entropy_chain(std::int64_t N, std::int64_t V) {
  Chain ch;
  ch.name = "softmax + cross-entropy";
  ch.id = "softmax_ce";
  const Tensor x = random({N, V}, "logits", 2.0f), targets = Tensor::empty({N}, DType::i32, MemCategory::Activation);
  for (std::int64_t i = 0; i < N; ++i)
    targets.data<std::int32_t>()[i] = static_cast<std::int32_t>(std::fmod(
        std::floor(static_cast<double>(rng::uniform(kSeed, "targets", static_cast<std::uint64_t>(i))) * V), V));
  const Tensor loss = output({N}), d = output({N, V});
  const float k = 1.0f / static_cast<float>(N);  // the gradient of the mean loss
  ch.inputs = {x, targets};
  ch.outputs = {loss, d};
  ch.reset = [] {};
  const std::int32_t* t = targets.data<std::int32_t>();

  Variant un{"unfused", {}, {}};
  const Tensor m = scratch({N}), e = scratch({N, V}), s = scratch({N}), p = scratch({N, V});
  un.scratch = {m, e, s, p};
  un.passes = {
      {"row_max", {x}, {m}, [=] { unfused::row_max(f(x), f(m), N, V); }},
      {"sub_rows_exp", {x, m}, {e}, [=] { unfused::sub_rows_exp(f(x), f(m), f(e), N, V); }},
      {"row_sum", {e}, {s}, [=] { unfused::row_sum(f(e), f(s), N, V); }},
      {"div_rows", {e, s}, {p}, [=] { unfused::div_rows(f(e), f(s), f(p), N, V); }},
      // reads one probability per row: a gather of N elements of p, not the whole of it
      {"nll", {targets}, {loss}, [=] { unfused::nll(f(p), t, f(loss), N, V); }, {{p, N}}},
      {"softmax_grad", {p, targets}, {d}, [=] { unfused::softmax_grad(f(p), t, k, f(d), N, V); }},
  };
  Variant fu{"fused", {}, {}};
  fu.passes = {{"softmax_cross_entropy", {x, targets}, {loss, d},
                [=] { fused::softmax_cross_entropy(f(x), t, k, f(loss), f(d), N, V); }}};
  ch.variants = {un, fu};
  return ch;
}

fused::AdamWStep adamw_chain_step() {
  const AdamWConfig cfg;
  const double t = 10;
  fused::AdamWStep s{};
  s.decay = 1.0f - static_cast<float>(cfg.lr) * static_cast<float>(cfg.weight_decay);
  s.beta1 = static_cast<float>(cfg.beta1);
  s.beta2 = static_cast<float>(cfg.beta2);
  s.step_size = static_cast<float>(cfg.lr / (1.0 - std::pow(cfg.beta1, t)));
  s.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(cfg.beta2, t)));
  s.eps = static_cast<float>(cfg.eps);
  return s;
}

Chain adamw_chain(std::int64_t P) {
  Chain ch;
  ch.name = "AdamW step";
  ch.id = "adamw";
  const Tensor g = random({P}, "grad", 1e-2f);
  const Tensor p = random({P}, "param", 0.02f), m = random({P}, "m", 1e-3f);
  Tensor v = random({P}, "v", 1e-5f);
  for (std::int64_t i = 0; i < P; ++i) f(v)[i] = f(v)[i] * f(v)[i];  // v >= 0
  ch.inputs = {g};
  ch.outputs = {p, m, v};
  ch.reset = restore({p, m, v});
  // (The core's AdamW is the fused loop after a separate decay pass; the tests compare with it.)
  const fused::AdamWStep s = adamw_chain_step();

  Variant un{"unfused", {}, {}};
  const Tensor den = scratch({P});
  un.scratch = {den};
  un.passes = {
      {"scale", {p}, {p}, [=] { unfused::scale_inplace(f(p), s.decay, P); }},
      {"scale", {m}, {m}, [=] { unfused::scale_inplace(f(m), s.beta1, P); }},
      {"axpy", {m, g}, {m}, [=] { unfused::axpy(f(m), 1.0f - s.beta1, f(g), P); }},
      {"scale", {v}, {v}, [=] { unfused::scale_inplace(f(v), s.beta2, P); }},
      {"addcmul", {v, g}, {v}, [=] { unfused::addcmul(f(v), 1.0f - s.beta2, f(g), f(g), P); }},
      {"sqrt", {v}, {den}, [=] { unfused::sqrt(f(v), f(den), P); }},
      {"div_scalar", {den}, {den}, [=] { unfused::div_scalar_inplace(f(den), s.bc2_sqrt, P); }},
      {"add_scalar", {den}, {den}, [=] { unfused::add_scalar_inplace(f(den), s.eps, P); }},
      {"addcdiv", {p, m, den}, {p}, [=] { unfused::addcdiv(f(p), -s.step_size, f(m), f(den), P); }},
  };
  Variant fu{"fused", {}, {}};
  fu.passes = {{"adamw", {p, g, m, v}, {p, m, v}, [=] { fused::adamw(f(p), f(g), f(m), f(v), s, P); }}};
  ch.variants = {un, fu};
  return ch;
}

const std::vector<std::string>& chain_ids() {
  static const std::vector<std::string> ids = {"norm_fwd", "norm_bwd", "swiglu_fwd", "swiglu_bwd", "softmax_ce", "adamw"};
  return ids;
}

Chain make_chain(const std::string& id, const ChainSizes& z) {
  if (id == "norm_fwd") return residual_norm_forward_chain(z.rows, z.hidden);
  if (id == "norm_bwd") return residual_norm_backward_chain(z.rows, z.hidden);
  if (id == "swiglu_fwd") return swiglu_forward_chain(z.rows, z.ffn);
  if (id == "swiglu_bwd") return swiglu_backward_chain(z.rows, z.ffn);
  if (id == "softmax_ce") return softmax_cross_entropy_chain(z.rows, z.vocab);
  if (id == "adamw") return adamw_chain(z.params);
  throw Error("no chain '" + id + "'");
}

}  // namespace usp::ch13
