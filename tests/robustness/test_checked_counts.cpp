// Numbers are checked, not wrapped: counts that do not fit in 64 bits are errors, and model
// sizes outside their limits are refused with the allowed range.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "common/calc/flops_model.hpp"
#include "common/calc/memory_model.hpp"
#include "common/checked_math.hpp"
#include "common/model/config.hpp"
#include "common/tensor.hpp"

using namespace usp;

namespace {
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
}  // namespace

TEST_CASE("Count arithmetic is exact in range and throws on overflow", "[checked]") {
  CHECK((Count(3) * 4 + 5 - 2).value() == 15);
  CHECK((Count(kMax) - 1 + 1).value() == kMax);
  CHECK((Count(std::int64_t{1} << 31) * (std::int64_t{1} << 31)).value() == std::int64_t{1} << 62);
  CHECK_THROWS_AS(Count(std::int64_t{1} << 32) * (std::int64_t{1} << 31), OverflowError);
  CHECK_THROWS_AS(Count(kMax) + 1, OverflowError);
  CHECK_THROWS_AS(Count(kMin) - 1, OverflowError);
  CHECK_THROWS_AS(Count(kMin) / -1, OverflowError);
  CHECK_THROWS_WITH(checked_mul(kMax, 2), Catch::Contains("does not fit in a 64-bit integer"));
  CHECK(div_round_up(kMax, 2) == kMax / 2 + 1);  // no n + d - 1 overflow
  CHECK(div_round_up(32, 7) == 5);
  CHECK(div_round_up(28, 7) == 4);
}

TEST_CASE("model sizes outside their limits are refused with the allowed range", "[checked]") {
  ModelConfig c = ModelConfig::builtin("usp-tiny");
  c.validate();
  SECTION("vocab 1e15 (a config.json typo) is an error, not an allocation") {
    c.vocab = 1'000'000'000'000'000;
    CHECK_THROWS_WITH(c.validate(), Catch::Contains("vocab must be between 1 and 16777216"));
  }
  SECTION("each size has its limit") {
    c.layers = ModelConfig::kMaxLayers + 1;
    CHECK_THROWS_WITH(c.validate(), Catch::Contains("layers must be between 1 and 65536"));
  }
  SECTION("the largest accepted model still counts its parameters exactly") {
    c.vocab = ModelConfig::kMaxVocab;
    c.hidden = ModelConfig::kMaxHidden;
    c.heads = ModelConfig::kMaxHeads;
    c.kv_heads = ModelConfig::kMaxHeads;
    c.ffn = ModelConfig::kMaxFfn;
    c.layers = ModelConfig::kMaxLayers;
    c.validate();
    // h·a·d + 2·h·g·d + a·d·h + 3·h·f + 2h per layer, with a·d = g·d = h.
    const std::int64_t h = c.hidden, per_layer = 4 * h * h + 3 * h * c.ffn + 2 * h;
    CHECK(c.params_per_layer() == per_layer);
    CHECK(c.num_parameters() == 2 * c.vocab * h + c.layers * per_layer + h);
  }
}

TEST_CASE("the calculator's byte counts throw instead of going negative", "[checked]") {
  calc::TrainingSetup s;
  s.model = ModelConfig::builtin("llama3.1-8b");
  s.seq = 1'000'000'000;  // usp_calc --seq 1000000000 printed negative bytes
  CHECK_THROWS_AS(calc::memory_per_rank(s), OverflowError);
  s.seq = 4096;
  const calc::MemoryBreakdown m = calc::memory_per_rank(s);
  CHECK(m.activations > 0);
  CHECK(m.checked_total() == m.total());
  s.mbs = std::int64_t{1} << 40;
  s.dp = std::int64_t{1} << 30;
  CHECK_THROWS_AS(calc::flops_per_step(s), OverflowError);  // tokens = mbs · seq · dp
  CHECK_THROWS_AS(calc::course_layer_activation_bytes(s.model, std::int64_t{1} << 40, std::int64_t{1} << 40,
                                                      Recompute::full, 2),
                  OverflowError);
}

TEST_CASE("a tensor whose element or byte count overflows is refused before allocating", "[checked]") {
  const std::int64_t big = std::int64_t{1} << 32;
  CHECK_THROWS_WITH(shape_numel({big, big}), Catch::Contains("more elements than fit in 64 bits"));
  CHECK_THROWS_WITH(Tensor::empty({std::int64_t{1} << 62}, DType::f32),
                    Catch::Contains("more bytes than fit in 64 bits"));
  CHECK(shape_numel({big, 4}) == big * 4);
}
