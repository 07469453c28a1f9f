// Generation (common/model/generate.hpp, kv_cache.hpp, sampling.hpp): the KV cache changes how
// much is computed, never what. The oracle is the model's own forward over the whole sequence.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/model/generate.hpp"
#include "common/model/kv_cache.hpp"
#include "common/model/model.hpp"
#include "tests/model/model_fixtures.hpp"

using namespace usp;
using namespace usp::testing;

namespace {

ModelConfig moe_generation_config() {
  ModelConfig c = gradcheck_config();
  c.name = "gradcheck-moe";
  c.experts = 4;
  c.experts_per_token = 2;
  return small_model(c);
}

std::vector<std::int32_t> tokens_of(const Tensor& t) {
  return {t.data<std::int32_t>(), t.data<std::int32_t>() + t.numel()};
}

Tensor row_tensor(const std::vector<std::int32_t>& ids) {
  Tensor t = Tensor::empty({1, static_cast<std::int64_t>(ids.size())}, DType::i32);
  std::copy(ids.begin(), ids.end(), t.data<std::int32_t>());
  return t;
}

}  // namespace

TEST_CASE("generation with a KV cache = the whole sequence's forward at every position", "[model][generate]") {
  for (const ModelConfig& c : {gradcheck_config(), gradcheck_config(/*tied=*/true), moe_generation_config()}) {
    INFO(c.str() << (c.tied_embeddings ? " tied" : ""));
    ParamStore params(c);
    params.init(11);
    const std::vector<std::int32_t> prompt = tokens_of(random_tokens(1, 5, c.vocab, 3, "prompt"));
    const std::int64_t P = 5, n = 24;
    const Generation g = generate(params, prompt, n, SamplingSettings{}, /*keep_logits=*/true);
    REQUIRE(g.tokens.size() == static_cast<std::size_t>(n));

    // The oracle: the prompt and the first n - 1 generated tokens through the model at once.
    std::vector<std::int32_t> all = prompt;
    all.insert(all.end(), g.tokens.begin(), g.tokens.end() - 1);
    Model model(params);
    const std::vector<float> full = model.forward_logits(row_tensor(all)).to_floats();
    const std::int64_t V = c.vocab;
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = full.data() + (P - 1 + i) * V;
      const std::vector<float>& cached = g.logits[static_cast<std::size_t>(i)];
      double worst = 0;
      for (std::int64_t v = 0; v < V; ++v) worst = std::max(worst, std::abs(double(row[v]) - cached[static_cast<std::size_t>(v)]));
      INFO("generated token " << i << " (position " << P + i << ")");
      // fp32, the same ops but a different attention (ops::attention_block_forward over the cache,
      // normalised by its log-sum-exp): a few roundings of logits of size ~1.
      CHECK(worst < 2e-5);
      const std::int64_t best = std::max_element(row, row + V) - row;
      CHECK(g.tokens[static_cast<std::size_t>(i)] == best);
    }
  }
}

TEST_CASE("the KV cache: the prompt at once = token by token; its bytes; inference only", "[model][generate]") {
  const ModelConfig c = gradcheck_config();
  ParamStore params(c);
  params.init(5);
  const std::vector<std::int32_t> prompt = tokens_of(random_tokens(1, 7, c.vocab, 4, "prompt"));
  const Generation at_once = generate(params, prompt, 1, SamplingSettings{}, /*keep_logits=*/true);

  KvCache cache(c, 8, DType::f32, Device::cpu());
  // 2 (K, V) · L 2 · 8 tokens · G 2 · D 4 · 4 bytes
  CHECK(cache.bytes() == 2 * 2 * 8 * 2 * 4 * 4);
  ModelOptions options;
  options.attention = &cache;
  Model model(params, options);
  std::vector<float> last;
  for (const std::int32_t t : prompt) {
    cache.begin(1);
    last = model.forward_logits(row_tensor({t})).to_floats();
  }
  CHECK(cache.length() == 7);
  for (std::size_t v = 0; v < last.size(); ++v) CHECK(last[v] == Approx(at_once.logits[0][v]).margin(2e-5));

  cache.begin(1);
  (void)model.forward_logits(row_tensor({1}));
  CHECK_THROWS_WITH(cache.begin(1), Catch::Contains("the KV cache holds at most 8 tokens; 8 cached + 1 new would be 9"));
  KvCache two(c, 4, DType::f32, Device::cpu());
  ModelOptions o2;
  o2.attention = &two;
  Model m2(params, o2);
  two.begin(3);
  Tensor batch = random_tokens(2, 3, c.vocab, 1, "batch");
  CHECK_THROWS_WITH(m2.forward_logits(batch), Catch::Contains("the KV cache holds one sequence; got a batch of 2"));
  Tensor none;
  CHECK_THROWS_WITH(two.attention_backward(none, none, none, none, none, none, none, none, none),
                    Catch::Contains("no backward through the cache"));
}

TEST_CASE("generate refuses what it cannot do, with the reason", "[model][generate]") {
  const ModelConfig c = gradcheck_config();  // vocab 19, max_seq 64
  ParamStore params(c);
  params.init(1);
  CHECK_THROWS_WITH(generate(params, {}, 3, {}), Catch::Contains("the prompt is empty"));
  CHECK_THROWS_WITH(generate(params, {1, 19}, 3, {}),
                    Catch::Contains("prompt token 1 is 19, outside the vocabulary [0, 19)"));
  CHECK_THROWS_WITH(generate(params, {1, 2, 3}, 62, {}),
                    Catch::Contains("a prompt of 3 tokens + 62 new ones exceeds the model's max_position_embeddings 64"));
  CHECK_NOTHROW(generate(params, {1, 2, 3}, 61, {}));
  CHECK_THROWS_WITH(generate(params, {1}, 2, SamplingSettings{-0.5, 0, 0}), Catch::Contains("temperature must be"));
}

TEST_CASE("choosing a token: greedy, top-k, and draws that follow softmax(logits / T)", "[model][generate]") {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -INFINITY, 0.5f};
  // Greedy: the largest logit, ties to the lower id; top-k 1 is greedy at any temperature.
  CHECK(choose_token(logits, {0, 0, 1}, 0) == 1);
  for (std::uint64_t i = 0; i < 50; ++i) CHECK(choose_token(logits, {5.0, 1, 9}, i) == 1);

  // T = 2, top-k 3 by hand: ids 1, 3 (logit 3; the tie keeps both in id order) and 2 (logit 2).
  const SamplingSettings s{2.0, 3, 42};
  const std::vector<double> p = sampling_probabilities(logits, s);
  const double z = 2 * std::exp(0.0) + std::exp(-0.5);
  const std::vector<double> expected = {0, 1 / z, std::exp(-0.5) / z, 1 / z, 0, 0};
  for (std::size_t v = 0; v < p.size(); ++v) CHECK(p[v] == Approx(expected[v]).margin(1e-12));

  // 40,000 draws (index = the draw): each frequency within 4.5 standard deviations of p.
  const int draws = 40000;
  std::map<std::int32_t, int> count;
  for (int i = 0; i < draws; ++i) ++count[choose_token(logits, s, static_cast<std::uint64_t>(i))];
  for (std::size_t v = 0; v < p.size(); ++v) {
    const double mean = draws * p[v], sd = std::sqrt(draws * p[v] * (1 - p[v]));
    INFO("token " << v << ": " << count[static_cast<std::int32_t>(v)] << " draws, expected " << mean);
    CHECK(std::abs(count[static_cast<std::int32_t>(v)] - mean) <= 4.5 * sd + 1e-9);
  }
  // The same (seed, index), the same token; a draw depends on the seed.
  CHECK(choose_token(logits, s, 7) == choose_token(logits, s, 7));
  int differ = 0;
  for (std::uint64_t i = 0; i < 64; ++i) differ += choose_token(logits, s, i) != choose_token(logits, {2.0, 3, 43}, i);
  CHECK(differ > 10);

  CHECK_THROWS_WITH(choose_token({1.0f, NAN}, s, 0), Catch::Contains("logit 1 is nan: the model's output is not finite"));
  CHECK_THROWS_WITH(choose_token(logits, {0, -1, 0}, 0), Catch::Contains("top-k must be >= 0"));
  CHECK_THROWS_WITH(choose_token({}, s, 0), Catch::Contains("no logits"));
}
