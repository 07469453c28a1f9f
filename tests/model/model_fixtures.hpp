// Small models and random batches shared by the model tests.
#pragma once
#include <cstdint>
#include <string>

#include "common/model/config.hpp"
#include "common/rng.hpp"
#include "common/tensor.hpp"
#include "tests/support/small_model.hpp"

namespace usp::testing {

// Two layers, GQA (4 query heads over 2 kv heads), sizes that are not powers of two.
// init_std 0.3: large enough that every path carries a visible gradient.
inline ModelConfig gradcheck_config(bool tied = false) {
  return small_model({.name = "gradcheck", .vocab = 19, .hidden = 16, .layers = 2, .heads = 4, .kv_heads = 2,
                      .ffn = 20, .max_seq = 64, .init_std = 0.3, .tied_embeddings = tied});
}

// Random tokens in [0, vocab) from the counter-based RNG: [B, T] i32.
inline Tensor random_tokens(std::int64_t B, std::int64_t T, std::int64_t vocab, std::uint64_t seed,
                            const std::string& name) {
  Tensor t = Tensor::empty({B, T}, DType::i32);
  for (std::int64_t i = 0; i < B * T; ++i)
    t.data<std::int32_t>()[i] =
        static_cast<std::int32_t>(rng::uniform(seed, name, static_cast<std::uint64_t>(i)) * static_cast<float>(vocab)) %
        static_cast<std::int32_t>(vocab);
  return t;
}

}  // namespace usp::testing
