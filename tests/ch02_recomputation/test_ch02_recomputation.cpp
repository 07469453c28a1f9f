// Chapter 02: none / selective / full on the same batch. The activations held between forward
// and backward are exactly L × (the layer formula of the mode) + the head's; the gradients are
// bit-identical; the extra FLOPs are the recomputed work.
#include <catch2/catch.hpp>

#include "common/calc/memory_model.hpp"
#include "common/data/dataset.hpp"
#include "chapters/02_recomputation/recompute_measurement.hpp"

using namespace usp;
using namespace usp::ch02;

namespace {

TrainingConfig tiny(DType dt) {
  TrainingConfig cfg;
  cfg.model = ModelConfig::builtin("usp-tiny");  // L = 2, h = 64, a = 4, g = 2, f = 192
  cfg.seq = 48;
  cfg.mbs = 2;
  cfg.dtype = dt;
  return cfg;
}

}  // namespace

TEST_CASE("recomputation: memory by the formula, identical gradients, counted FLOPs", "[ch02]") {
  for (DType dt : {DType::f32, DType::bf16}) {
    const TrainingConfig cfg = tiny(dt);
    INFO(dtype_name(dt));
    const auto data = make_dataset("synthetic", cfg.seed);
    const Batch batch = data->batch(0, 0, cfg.mbs, cfg.seq);
    const ModeResult none = measure_mode(cfg, Recompute::none, batch);
    const ModeResult sel = measure_mode(cfg, Recompute::selective, batch);
    const ModeResult full = measure_mode(cfg, Recompute::full, batch);

    // What is held after forward = L × the layer's count + the head (final norm in and out,
    // its fp32 rstd, the logits) — the head is the same in every mode.
    const std::int64_t L = cfg.model.layers, N = cfg.mbs * cfg.seq, es = static_cast<std::int64_t>(dtype_size(dt));
    const std::int64_t head = N * (2 * cfg.model.hidden * es + 4 + cfg.model.vocab * es);
    for (const ModeResult* r : {&none, &sel, &full}) {
      INFO(recompute_name(r->mode));
      CHECK(r->layer_kept == r->layer_formula);
      CHECK(r->held_after_forward == L * r->layer_formula + head);
    }
    // The formulas' differences: selective drops the b·a·s² probabilities of each layer; full
    // keeps only the layer input (s·b·h).
    CHECK(none.layer_kept - sel.layer_kept == cfg.mbs * cfg.model.heads * cfg.seq * cfg.seq * es);
    CHECK(full.layer_kept == N * cfg.model.hidden * es);
    CHECK(none.peak_activation > sel.peak_activation);
    CHECK(sel.peak_activation > full.peak_activation);

    // Gradients: the same arithmetic, only at different times.
    CHECK(count_differences(sel.gradients, none.gradients) == 0);
    CHECK(count_differences(full.gradients, none.gradients) == 0);

    // FLOPs: same model FLOPs (MFU's numerator); the hardware does more.
    CHECK(sel.flops.model() == none.flops.model());
    CHECK(full.flops.model() == none.flops.model());
    CHECK(none.flops.recompute == 0);
    CHECK(sel.flops.recompute == L * 2 * cfg.mbs * cfg.model.heads * cfg.seq * cfg.seq * cfg.model.head_dim());
    CHECK(full.flops.recompute > sel.flops.recompute);
    // full recomputes every layer's forward: the forward minus the LM head's matmul.
    CHECK(full.flops.recompute == none.flops.forward - 2 * N * cfg.model.vocab * cfg.model.hidden);
  }
}
