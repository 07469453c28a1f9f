#include "chapters/12_flash_attention/attention_bench.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "common/memory_tracker.hpp"
#include "common/numeric_compare.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"

namespace usp::ch12 {

namespace {

Tensor random(const Shape& shape, const char* name) {
  return Tensor::from_floats(rng::normal_values(7, name, shape_numel(shape)), shape, DType::f32, MemCategory::Activation);
}

// The largest |a - b| of two f32 tensors of one shape.
double gap(const Tensor& a, const Tensor& b) {
  const std::span<const float> x(a.data<float>(), static_cast<std::size_t>(a.numel()));
  return max_abs_diff(x, std::span<const float>(b.data<float>(), static_cast<std::size_t>(b.numel())));
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
    f.max_abs_error = std::max({gap(naive.o, flash.o), gap(naive.dq, flash.dq), gap(naive.dk, flash.dk),
                                gap(naive.dv, flash.dv)});
    out.push_back(f);
  }
  return out;
}

}  // namespace usp::ch12
