// AdamW: the update against a double-precision transcription of the algorithm, the state bytes
// the playbook counts (fp32: 8 bytes per parameter; bf16 parameters: 12 with the master copy),
// and a range update (what a ZeRO shard runs) equal to the same elements of a full update.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "common/float_formats.hpp"
#include "common/model/params.hpp"
#include "tests/model/model_fixtures.hpp"
#include "common/optim/adamw.hpp"
#include "common/rng.hpp"

using namespace usp;
using usp::testing::gradcheck_config;

namespace {

void fill_grads(ParamStore& p, int step) {
  Tensor g = Tensor::empty({p.numel()}, DType::f32);
  for (std::int64_t i = 0; i < p.numel(); ++i)
    g.data<float>()[i] = rng::normal(11, "grad" + std::to_string(step), static_cast<std::uint64_t>(i)) * 0.1f;
  if (p.dtype() == DType::f32) {
    p.flat_grad().copy_from(g);
  } else {
    Tensor narrow = Tensor::empty({p.numel()}, p.dtype());
    convert_from_float(g.data<float>(), p.dtype(), narrow.raw(), static_cast<std::size_t>(p.numel()));
    p.flat_grad().copy_from(narrow);
  }
}

}  // namespace

TEST_CASE("AdamW follows the algorithm (double reference) over several steps", "[optim]") {
  const ModelConfig cfg = gradcheck_config();
  ParamStore p(cfg);
  p.init(5);
  AdamWConfig hc;
  hc.lr = 1e-2;
  hc.weight_decay = 0.1;
  AdamW opt(p, hc);
  const std::vector<float> w0 = p.flat().to_floats();
  // The reference state in double: weights, first and second moments.
  struct Moments {
    std::vector<double> w, m, v;
  } ref{std::vector<double>(w0.begin(), w0.end()), std::vector<double>(w0.size()), std::vector<double>(w0.size())};
  auto& [w, m, v] = ref;
  std::vector<char> decay(w.size(), 1);
  for (const auto& info : p.infos())
    if (info.is_norm)
      for (std::int64_t j = 0; j < info.numel; ++j) decay[static_cast<std::size_t>(info.offset + j)] = 0;
  for (int t = 1; t <= 5; ++t) {
    fill_grads(p, t);
    const auto g = p.flat_grad().to_floats();
    opt.step(p);
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (decay[i]) w[i] *= 1.0 - hc.lr * hc.weight_decay;
      m[i] = hc.beta1 * m[i] + (1 - hc.beta1) * g[i];
      v[i] = hc.beta2 * v[i] + (1 - hc.beta2) * double(g[i]) * g[i];
      const double mhat = m[i] / (1 - std::pow(hc.beta1, t)), vhat = v[i] / (1 - std::pow(hc.beta2, t));
      w[i] -= hc.lr * mhat / (std::sqrt(vhat) + hc.eps);
    }
  }
  // fp32 arithmetic: each step moves w by at most ~lr = 1e-2 with a relative error of a few
  // ulps (6e-8), and w itself carries one rounding per step: 5 steps stay below 1e-6 absolute.
  const auto got = p.flat().to_floats();
  for (std::size_t i = 0; i < w.size(); ++i) REQUIRE(std::fabs(got[i] - w[i]) <= 1e-6);
  CHECK(opt.step_count() == 5);
}

TEST_CASE("AdamW state bytes: 8 per parameter in fp32, 12 with bf16 parameters", "[optim][memory]") {
  const ModelConfig cfg = gradcheck_config();
  auto& tracker = MemoryTracker::instance();
  for (DType dt : {DType::f32, DType::bf16}) {
    ParamStore p(cfg, dt);
    p.init(5);
    const auto before = tracker.current()[MemCategory::OptimizerState];
    AdamW opt(p, {});
    const auto state = tracker.current()[MemCategory::OptimizerState] - before;
    CHECK(state == p.numel() * (dt == DType::f32 ? 8 : 12));
    CHECK(tracker.current()[MemCategory::Parameter] >= p.numel() * static_cast<std::int64_t>(dtype_size(dt)));
  }
}

TEST_CASE("bf16 parameters are the rounded fp32 master weights", "[optim]") {
  const ModelConfig cfg = gradcheck_config();
  ParamStore p(cfg, DType::bf16);
  p.init(5);
  AdamW opt(p, {});
  for (int t = 1; t <= 3; ++t) {
    fill_grads(p, t);
    opt.step(p);
  }
  const auto master = opt.master().to_floats();
  const auto params = p.flat().to_floats();
  for (std::size_t i = 0; i < master.size(); ++i) REQUIRE(params[i] == bf16_to_float(float_to_bf16(master[i])));
}

TEST_CASE("a range update equals those elements of the full update", "[optim]") {
  const ModelConfig cfg = gradcheck_config();
  ParamStore full(cfg), part(cfg);
  full.init(5);
  part.init(5);
  AdamW opt_full(full, {});
  const std::int64_t begin = 37, end = full.numel() - 101;  // crosses parameter boundaries
  AdamW opt_part(part, {}, begin, end);
  for (int t = 1; t <= 3; ++t) {
    fill_grads(full, t);
    fill_grads(part, t);
    opt_full.step(full);
    opt_part.step(part);
  }
  const auto a = full.flat().to_floats(), b = part.flat().to_floats(), init = [&] {
    ParamStore fresh(cfg);
    fresh.init(5);
    return fresh.flat().to_floats();
  }();
  for (std::int64_t i = 0; i < full.numel(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (i >= begin && i < end) REQUIRE(b[k] == a[k]);  // same element-wise arithmetic
    else REQUIRE(b[k] == init[k]);                     // outside the range: untouched
  }
}
