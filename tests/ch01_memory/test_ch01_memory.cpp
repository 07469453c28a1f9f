// Chapter 01: exercise 01.1 (a layer's activation bytes) against what the layer declares and
// what the tracker measures, and the training state's bytes against the exact counts.
#include <catch2/catch.hpp>

#include "chapters/01_memory/activation_bytes.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/rng.hpp"
#include "tests/support/small_model.hpp"

using namespace usp;

namespace {

Tensor tokens(std::int64_t b, std::int64_t s, std::int64_t vocab, const char* name) {
  Tensor t = Tensor::empty({b, s}, DType::i32);
  for (std::int64_t i = 0; i < b * s; ++i)
    t.data<std::int32_t>()[i] = static_cast<std::int32_t>(rng::uniform(5, name, static_cast<std::uint64_t>(i)) * vocab);
  return t;
}

ModelConfig shape(std::int64_t h, std::int64_t a, std::int64_t g, std::int64_t f, std::int64_t L) {
  return testing::small_model({.name = "custom", .hidden = h, .layers = L, .heads = a, .kv_heads = g, .ffn = f});
}

}  // namespace

TEST_CASE("exercise 01.1: a layer's activation bytes equal what it keeps, as measured", "[ch01]") {
  struct Case {
    ModelConfig cfg;
    std::int64_t b, s;
  };
  const Case cases[] = {
      {shape(64, 4, 2, 192, 2), 2, 16},  // GQA
      {shape(64, 4, 4, 160, 1), 3, 7},   // MHA, odd sequence length
      {shape(48, 6, 2, 100, 2), 1, 33},  // 3 query heads per kv head
      {shape(32, 2, 1, 64, 3), 4, 1},    // one token per sample
  };
  for (const Case& c : cases) {
    for (const DType act : {DType::f32, DType::bf16, DType::f16}) {
      for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
        INFO("exercise 01.1: " << c.cfg.str() << ", b = " << c.b << ", s = " << c.s << ", activations "
                               << dtype_name(act) << ", recompute " << recompute_name(mode));
        ParamStore params(c.cfg);
        params.init(1);
        Model model(params, {mode, act});
        model.forward(tokens(c.b, c.s, 256, "in"), tokens(c.b, c.s, 256, "tgt"));
        const std::int64_t yours = ch01::layer_activation_bytes(c.cfg, c.b, c.s, act, mode);
        for (std::int64_t l = 1; l <= c.cfg.layers; ++l) {
          INFO("layer " << l - 1 << ": declared " << model.saved_bytes()[static_cast<std::size_t>(l)]
                        << " B, measured " << model.measured_saved_bytes()[static_cast<std::size_t>(l)] << " B");
          CHECK(yours == model.saved_bytes()[static_cast<std::size_t>(l)]);
          CHECK(yours == model.measured_saved_bytes()[static_cast<std::size_t>(l)]);
        }
        const std::int64_t head = ch01::head_activation_bytes(c.cfg, c.b, c.s, act);
        // The head keeps the last layer's output, which the tracker saw allocated by that layer: its
        // measured growth is smaller than what it keeps by exactly that tensor.
        const std::int64_t last_output = c.b * c.s * c.cfg.hidden * static_cast<std::int64_t>(dtype_size(act));
        INFO("the head: declared " << model.saved_bytes().back() << " B, measured "
                                   << model.measured_saved_bytes().back() << " B + its input " << last_output << " B");
        CHECK(head == model.saved_bytes().back());
        CHECK(head == model.measured_saved_bytes().back() + last_output);
        model.backward();
      }
    }
  }
}

TEST_CASE("exercise 01.1: what a layer keeps grows with b·s, and its attention part with b·s²", "[ch01]") {
  // Derived, not transcribed: doubling b doubles every mode's count; doubling s doubles full's
  // and selective's and adds the probabilities' growth to none's: none(2s) - 2·none(s) = 2·b·a·s²·e.
  const ModelConfig cfg = shape(64, 4, 2, 192, 2);
  const std::int64_t b = 2, s = 12, a = 4;
  for (const DType act : {DType::f32, DType::bf16}) {
    const std::int64_t e = static_cast<std::int64_t>(dtype_size(act));
    for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      INFO("exercise 01.1: activations " << dtype_name(act) << ", recompute " << recompute_name(mode));
      const std::int64_t one = ch01::layer_activation_bytes(cfg, b, s, act, mode);
      CHECK(ch01::layer_activation_bytes(cfg, 2 * b, s, act, mode) == 2 * one);
      const std::int64_t probs = mode == Recompute::none ? 2 * b * a * s * s * e : 0;
      CHECK(ch01::layer_activation_bytes(cfg, b, 2 * s, act, mode) - 2 * one == probs);
    }
    INFO("full keeps the layer input only: b·s·h·e");
    CHECK(ch01::layer_activation_bytes(cfg, b, s, act, Recompute::full) == b * s * 64 * e);
  }
}

TEST_CASE("exercise 01.1: the count refuses what it cannot count", "[ch01]") {
  const ModelConfig cfg = shape(64, 4, 2, 192, 2);
  INFO("exercise 01.1: layer_activation_bytes must refuse with the contract's message");
  CHECK_THROWS_AS(ch01::layer_activation_bytes(cfg, 0, 16, DType::f32), UsageError);
  CHECK_THROWS_WITH(ch01::layer_activation_bytes(cfg, 0, 16, DType::f32),
                    Catch::StartsWith("layer_activation_bytes: b and s must be >= 1, got b = 0, s = 16"));
  CHECK_THROWS_WITH(ch01::layer_activation_bytes(cfg, 2, -1, DType::bf16, Recompute::full),
                    Catch::StartsWith("layer_activation_bytes: b and s must be >= 1, got b = 2, s = -1"));
  for (const DType bad : {DType::i32, DType::e4m3, DType::e5m2})
    CHECK_THROWS_WITH(ch01::layer_activation_bytes(cfg, 2, 16, bad),
                      Catch::StartsWith(std::string("layer_activation_bytes: activations are f32, bf16 or f16, not ") +
                                        dtype_name(bad)));
  CHECK_THROWS_WITH(ch01::head_activation_bytes(cfg, 3, 0, DType::f32),
                    Catch::StartsWith("head_activation_bytes: b and s must be >= 1, got b = 3, s = 0"));
  CHECK_THROWS_WITH(ch01::head_activation_bytes(cfg, 3, 4, DType::e4m3),
                    Catch::StartsWith("head_activation_bytes: activations are f32, bf16 or f16, not e4m3"));
  ModelConfig moe = cfg;
  moe.name = "tiny-moe";
  moe.experts = 4;
  CHECK_THROWS_AS(ch01::layer_activation_bytes(moe, 2, 16, DType::f32), UsageError);
  CHECK_THROWS_WITH(ch01::layer_activation_bytes(moe, 2, 16, DType::f32),
                    Catch::StartsWith("layer_activation_bytes: tiny-moe is a mixture of experts; its layers keep "
                                      "what the routing decides"));
  INFO("a mixture of experts has an ordinary head: counted like a dense model's");
  CHECK(ch01::head_activation_bytes(moe, 2, 16, DType::f32) == ch01::head_activation_bytes(cfg, 2, 16, DType::f32));
}

TEST_CASE("the training state's tracked bytes equal the counts exactly", "[ch01]") {
  const ModelConfig cfg = shape(64, 4, 2, 192, 2);
  auto& tracker = MemoryTracker::instance();
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dt));
    const MemCounts before = tracker.current();
    ParamStore params(cfg, dt);
    AdamW opt(params, {});
    const MemCounts after = tracker.current();
    const std::int64_t N = cfg.num_parameters(), es = static_cast<std::int64_t>(dtype_size(dt));
    CHECK(params.numel() == N);
    CHECK(after[MemCategory::Parameter] - before[MemCategory::Parameter] == N * es);
    CHECK(after[MemCategory::Gradient] - before[MemCategory::Gradient] == N * es);
    // fp32: Adam's m and v (4N + 4N); bf16: plus the fp32 master weights (4N): 2N+2N+12N in all.
    CHECK(after[MemCategory::OptimizerState] - before[MemCategory::OptimizerState] == N * (dt == DType::f32 ? 8 : 12));
  }
}
