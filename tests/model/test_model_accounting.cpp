// What the model says it keeps, what the tracker measured, the hooks later chapters rely on,
// and the FLOP counts behind MFU / HFU.
#include <catch2/catch.hpp>

#include <vector>

#include "common/model/model.hpp"
#include "tests/model/model_fixtures.hpp"
#include "common/ops/ops.hpp"

using namespace usp;
using usp::testing::gradcheck_config;
using usp::testing::random_tokens;

namespace {
std::int64_t activation_bytes() { return MemoryTracker::instance().current()[MemCategory::Activation]; }
}  // namespace

TEST_CASE("each layer's saved bytes are what the tracker measured", "[model][memory]") {
  const ModelConfig cfg = gradcheck_config();
  const std::int64_t B = 2, T = 9;
  const Tensor in = random_tokens(B, T, cfg.vocab, 5, "inputs");
  const Tensor tgt = random_tokens(B, T, cfg.vocab, 5, "targets");
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    for (DType adt : {DType::f32, DType::bf16}) {
      INFO("recompute " << recompute_name(mode) << ", activations " << dtype_name(adt));
      ParamStore params(cfg);
      params.init(3);
      Model model(params, {mode, adt});
      const std::int64_t before = activation_bytes();
      model.forward(in, tgt);
      const std::int64_t held = activation_bytes() - before;
      const auto& declared = model.saved_bytes();
      const auto& measured = model.measured_saved_bytes();
      const int L = static_cast<int>(cfg.layers);
      REQUIRE(declared.size() == static_cast<std::size_t>(L + 2));
      // A layer allocates its output (the next unit's input) and keeps its own input, which the
      // unit before allocated: same size, so per layer the two counts agree exactly.
      for (int u = 1; u <= L; ++u) CHECK(declared[u] == measured[u]);
      // The embedding allocates the first layer's input but keeps nothing; the head keeps the
      // last layer's output. In total, declared = measured = what is held.
      std::int64_t total_declared = 0, total_measured = 0;
      for (int u = 0; u <= L + 1; ++u) {
        total_declared += declared[u];
        total_measured += measured[u];
      }
      CHECK(declared[0] == 0);
      CHECK(measured[0] == B * T * cfg.hidden * static_cast<std::int64_t>(dtype_size(adt)));
      CHECK(total_declared == held);
      CHECK(total_measured == held);
      // The layer's contents, written out per token (es = activation element size):
      //   x, h1, a, x2, h2 (C each) + q (H·D) + k, v (G·D each) + g, u, z (F each) in es bytes,
      //   + two fp32 rstd values, + the probabilities (H·T per token) without recomputation.
      const std::int64_t es = static_cast<std::int64_t>(dtype_size(adt)), N = B * T;
      const std::int64_t C = cfg.hidden, F = cfg.ffn, kv = cfg.kv_dim(), H = cfg.heads;
      std::int64_t per_layer = N * ((6 * C + 2 * kv + 3 * F) * es + 2 * 4);
      if (mode == Recompute::none) per_layer += N * H * T * es;
      if (mode == Recompute::full) per_layer = N * C * es;
      for (int u = 1; u <= L; ++u) CHECK(declared[u] == per_layer);
      model.backward();
      CHECK(activation_bytes() == before);  // backward released every saved tensor
    }
  }
}

TEST_CASE("peak activation memory orders none > selective > full", "[model][memory][recompute]") {
  const ModelConfig cfg = gradcheck_config();
  const Tensor in = random_tokens(2, 16, cfg.vocab, 6, "inputs");
  const Tensor tgt = random_tokens(2, 16, cfg.vocab, 6, "targets");
  std::vector<std::int64_t> peaks;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    ParamStore params(cfg);
    params.init(3);
    Model model(params, {mode, DType::f32});
    auto& tracker = MemoryTracker::instance();
    tracker.reset_peak();
    const std::int64_t base = activation_bytes();
    model.forward(in, tgt);
    model.backward();
    peaks.push_back(tracker.peak()[MemCategory::Activation] - base);
  }
  CHECK(peaks[0] > peaks[1]);
  CHECK(peaks[1] > peaks[2]);
}

TEST_CASE("hooks: every unit forward and backward once, each gradient ready once in reverse order",
          "[model][hooks]") {
  for (bool tied : {false, true}) {
    const ModelConfig cfg = gradcheck_config(tied);
    ParamStore params(cfg);
    params.init(3);
    Model model(params);
    std::vector<int> fwd, bwd, ready;
    ModelHooks hooks;
    hooks.before_forward = [&](int u) { fwd.push_back(u); };
    hooks.after_forward = [&](int u) { fwd.push_back(100 + u); };
    hooks.before_backward = [&](int u) { bwd.push_back(u); };
    hooks.after_backward = [&](int u) { bwd.push_back(100 + u); };
    hooks.grad_ready = [&](int i) { ready.push_back(i); };
    model.set_hooks(hooks);
    const Tensor in = random_tokens(1, 4, cfg.vocab, 7, "inputs");
    model.forward(in, in);
    model.backward();
    const int units = params.num_units();
    std::vector<int> want_fwd, want_bwd, want_ready;
    for (int u = 0; u < units; ++u) want_fwd.insert(want_fwd.end(), {u, 100 + u});
    for (int u = units - 1; u >= 0; --u) want_bwd.insert(want_bwd.end(), {u, 100 + u});
    for (int i = static_cast<int>(params.infos().size()) - 1; i >= 0; --i) want_ready.push_back(i);
    CHECK(fwd == want_fwd);
    CHECK(bwd == want_bwd);
    CHECK(ready == want_ready);
  }
}

TEST_CASE("FLOP counts: forward by formula, backward twice forward, recompute = HFU - MFU", "[model][flops]") {
  const ModelConfig cfg = gradcheck_config();
  const std::int64_t B = 2, T = 8, N = B * T;
  const Tensor in = random_tokens(B, T, cfg.vocab, 8, "inputs");
  // Matmul FLOPs: 2 per multiply-add for every weight of a Linear, per token (the embedding
  // is a lookup); attention: q·kᵀ and probs·v, each 2·B·H·T·T·D (full T², the convention the
  // playbook and Megatron use).
  const std::int64_t H = cfg.heads, D = cfg.head_dim(), L = cfg.layers;
  const std::int64_t linear_weights = L * (cfg.params_per_layer() - 2 * cfg.hidden) + cfg.vocab * cfg.hidden;
  const std::int64_t attention = L * 2 * (2 * B * H * T * T * D);
  const std::int64_t forward = 2 * N * linear_weights + attention;
  StepFlops got[3];
  int i = 0;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    ParamStore params(cfg);
    params.init(3);
    Model model(params, {mode, DType::f32});
    model.forward(in, in);
    model.backward();
    got[i++] = model.flops();
  }
  for (const StepFlops& f : got) {
    CHECK(f.forward == forward);
    CHECK(f.backward == 2 * forward);
  }
  CHECK(got[0].recompute == 0);
  CHECK(got[1].recompute == L * 2 * B * H * T * T * D);  // the q·kᵀ of every layer again
  // full: every layer's forward again (all but the embedding and the head)
  CHECK(got[2].recompute == forward - 2 * N * cfg.vocab * cfg.hidden);
}
