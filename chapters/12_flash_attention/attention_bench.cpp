#include "chapters/12_flash_attention/attention_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

#include "common/memory_tracker.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"

namespace usp::ch12 {

namespace {

Tensor random(const Shape& shape, const char* name, MemCategory category = MemCategory::Activation) {
  Tensor t = Tensor::empty(shape, DType::f32, category);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng::normal(7, name, i));
  return t;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, static_cast<double>(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
  return m;
}

double ms_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<AttentionPoint> bench_attention(const std::vector<std::int64_t>& seqs, BenchShape sh, FlashTiles tiles) {
  MemoryTracker& tracker = MemoryTracker::instance();
  std::vector<AttentionPoint> out;
  for (std::int64_t T : seqs) {
    const Shape qs{sh.batch, T, sh.heads, sh.head_dim}, ks{sh.batch, T, sh.kv_heads, sh.head_dim};
    const Tensor q = random(qs, "q"), k = random(ks, "k"), v = random(ks, "v"), dout = random(qs, "dout");
    struct Result {
      Tensor o, dq, dk, dv;
    };
    auto run = [&](const std::string& variant, Result& r) {
      r = {Tensor::empty(qs), Tensor::empty(qs), Tensor::empty(ks), Tensor::empty(ks)};
      AttentionPoint p{T, variant};
      const MemCounts before = tracker.current();
      tracker.reset_peak();
      if (variant == "naive") {
        Tensor probs = Tensor::empty({sh.batch, sh.heads, T, T}, DType::f32, MemCategory::Activation);
        p.forward_ms = ms_of([&] { ops::attention_forward(q, k, v, r.o, probs); });
        p.backward_ms = ms_of([&] { ops::attention_backward(dout, q, k, v, probs, r.dq, r.dk, r.dv); });
      } else {
        Tensor lse = Tensor::empty({sh.batch, sh.heads, T}, DType::f32, MemCategory::Activation);
        p.forward_ms = ms_of([&] { flash_attention_forward(q, k, v, true, tiles, r.o, lse); });
        p.backward_ms = ms_of([&] { flash_attention_backward(dout, q, k, v, r.o, lse, true, tiles, r.dq, r.dk, r.dv); });
      }
      const MemCounts peak = tracker.peak();
      p.memory_bytes = (peak[MemCategory::Activation] - before[MemCategory::Activation]) +
                       (peak[MemCategory::Temporary] - before[MemCategory::Temporary]);
      return p;
    };
    Result naive, flash;
    out.push_back(run("naive", naive));
    AttentionPoint f = run("flash", flash);
    f.max_abs_error = std::max({max_abs_diff(naive.o, flash.o), max_abs_diff(naive.dq, flash.dq),
                                max_abs_diff(naive.dk, flash.dk), max_abs_diff(naive.dv, flash.dv)});
    out.push_back(f);
  }
  return out;
}

}  // namespace usp::ch12
