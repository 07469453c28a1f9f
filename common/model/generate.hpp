// Generation: a prompt, then n tokens, each chosen from the logits of the last (sampling.hpp) and
// fed back, with the keys and values of every earlier token kept in a KvCache (kv_cache.hpp).
//
//   prefill  the prompt in one forward: its P tokens' keys and values enter the cache, and the
//            last position's logits choose token P
//   decode   each chosen token goes through the model alone (one token's work per layer plus an
//            attention over the cache) and its logits choose the next
//
// The same tokens as running the whole sequence through Model::forward_logits at every step
// (tests/model/test_generate.cpp checks it), for n + P token-passes instead of about (P + n)²/2.
// Token i of the result is chosen with index P + i (so a seed repeats a generation exactly).
// A mixture-of-experts model generates dropless (as Hugging Face's Mixtral does): capacity is a
// training-time budget over a batch, and one token at a time would change what it drops.
// Errors (UsageError): an empty prompt; a prompt token outside [0, vocab); P + n beyond the
// model's max_position_embeddings; the settings' errors (sampling.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "common/model/params.hpp"
#include "common/model/sampling.hpp"

namespace usp {

struct Generation {
  std::vector<std::int32_t> tokens;        // the n new tokens
  std::vector<std::vector<float>> logits;  // [n]: the logits each was chosen from (keep_logits)
  std::int64_t cache_bytes = 0;            // the KvCache's K and V for P + n tokens
  double prefill_seconds = 0, decode_seconds = 0;
};

// params: the model's parameters (any device; fp32, bf16 or f16, which is also the activation
// and cache dtype). Runs on params' device.
Generation generate(ParamStore& params, const std::vector<std::int32_t>& prompt, std::int64_t n,
                    const SamplingSettings& settings, bool keep_logits = false);

}  // namespace usp
