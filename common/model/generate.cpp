#include "common/model/generate.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/error.hpp"
#include "common/model/kv_cache.hpp"
#include "common/model/model.hpp"

namespace usp {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The last position's logits of a forward over `tokens` new tokens, on the host in f32.
std::vector<float> next_logits(Model& model, KvCache& cache, const std::vector<std::int32_t>& tokens) {
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  Tensor in = Tensor::empty({1, T}, DType::i32, MemCategory::Temporary);
  std::copy(tokens.begin(), tokens.end(), in.data<std::int32_t>());
  cache.begin(T);
  const Tensor logits = model.forward_logits(in);  // [T, V]
  const std::int64_t V = logits.dim(1);
  return logits.view((T - 1) * V, {V}).to(Device::cpu()).to_floats();
}

}  // namespace

Generation generate(ParamStore& params, const std::vector<std::int32_t>& prompt, std::int64_t n,
                    const SamplingSettings& settings, bool keep_logits) {
  const ModelConfig& c = params.config();
  const std::int64_t P = static_cast<std::int64_t>(prompt.size());
  if (P == 0) throw UsageError("the prompt is empty: generation needs at least one token to start from");
  for (std::int64_t i = 0; i < P; ++i)
    if (prompt[static_cast<std::size_t>(i)] < 0 || prompt[static_cast<std::size_t>(i)] >= c.vocab)
      throw UsageError("prompt token " + std::to_string(i) + " is " + std::to_string(prompt[static_cast<std::size_t>(i)]) +
                       ", outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
  if (n < 0) throw UsageError("the number of tokens to generate must be >= 0, got " + std::to_string(n));
  if (P + n > c.max_seq)
    throw UsageError("a prompt of " + std::to_string(P) + " tokens + " + std::to_string(n) +
                     " new ones exceeds the model's max_position_embeddings " + std::to_string(c.max_seq));
  USP_CHECK(c.capacity_factor == 0, "generate: the model must be dropless (set capacity_factor 0 when loading it)");

  KvCache cache(c, P + n, params.dtype(), params.device());
  ModelOptions options;
  options.activation_dtype = params.dtype();
  options.attention = &cache;
  Model model(params, options);

  Generation g;
  g.cache_bytes = cache.bytes();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = next_logits(model, cache, prompt);
  g.prefill_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t next = choose_token(logits, settings, static_cast<std::uint64_t>(P + i));
    g.tokens.push_back(next);
    if (keep_logits) g.logits.push_back(logits);
    if (i + 1 < n) logits = next_logits(model, cache, {next});
  }
  g.decode_seconds = seconds_since(t0);
  return g;
}

}  // namespace usp
