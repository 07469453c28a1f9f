// usp_sample: text from a checkpoint the course saved (Llama or Mixtral), byte-level.
//
//   usp_sample --checkpoint DIR --prompt TEXT [--tokens 200] [--temperature 0.8] [--top-k 40]
//              [--seed 1] [--json]
//
// The prompt's bytes are the first tokens; each new token is chosen from the last position's
// logits (common/model/sampling.hpp: temperature 0 is greedy) and fed back, the keys and values
// of the tokens before it kept in a KV cache (common/model/kv_cache.hpp), on the CPU in fp32
// (bf16/f16 checkpoints widened exactly). A Mixtral checkpoint generates dropless. Prints the
// prompt and what followed it (bytes that are not printable text as \xNN), then one line with the
// speed and the cache's size; --json prints {"prompt", "text", "tokens": [...], "cache_bytes",
// "prefill_seconds", "decode_seconds", ...}. A bad flag or checkpoint: "error: ..." and exit 2.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/io/checkpoint.hpp"
#include "common/json.hpp"
#include "common/model/generate.hpp"
#include "common/tool_main.hpp"

namespace {

using namespace usp;

// Token ids as text: a byte per id below 256 (printable ASCII, newline and tab as they are, any
// other byte as \xNN), <id> above (a checkpoint with a larger vocabulary).
std::string as_text(const std::vector<std::int32_t>& tokens) {
  std::string s;
  for (const std::int32_t t : tokens) {
    if (t >= 256) {
      s += '<';
      s += std::to_string(t);
      s += '>';
    } else if ((t >= 32 && t < 127) || t == '\n' || t == '\t') {
      s += static_cast<char>(t);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(t));
      s += hex;
    }
  }
  return s;
}

int sample_main(int argc, char** argv) {
  Cli cli("usp_sample", "text generated from a checkpoint (byte-level tokens), with a KV cache");
  cli.add_string("checkpoint", "", "checkpoint directory (config.json + model.safetensors)");
  cli.add_string("prompt", "", "the text to continue (its bytes are the first tokens)");
  cli.add_int("tokens", 200, "tokens to generate", 1, ModelConfig::kMaxSeq);
  cli.add_float("temperature", 0.8, "softmax temperature (0: greedy, the most likely token each time)", 0, 1e6);
  cli.add_int("top-k", 40, "draw among the k most likely tokens (0: all)", 0, ModelConfig::kMaxVocab);
  cli.add_int("seed", 1, "seed of the draws (the same seed, the same text)", 0, std::int64_t{1} << 62);
  cli.add_flag("json", "print one JSON object instead of text");
  if (!parse_tool_flags(cli, argc, argv)) return 0;
  const std::string dir = cli.get_string("checkpoint"), prompt_text = cli.get_string("prompt");
  if (dir.empty()) throw UsageError("--checkpoint DIR is required (see --help)");
  if (prompt_text.empty()) throw UsageError("--prompt TEXT is required: generation continues a text (see --help)");
  // Greedy decoding draws nothing: the flags of the draw would be ignored.
  if (cli.get_float("temperature") == 0)
    for (const char* flag : {"top-k", "seed"})
      if (cli.given(flag))
        throw UsageError(std::string("--") + flag + " shapes the random draw, and --temperature 0 is greedy (the most "
                         "likely token each time): give a temperature > 0, or leave --" + flag + " out");

  ModelConfig config = load_config(dir);
  config.capacity_factor = 0;  // generation is dropless (generate.hpp)
  const std::unique_ptr<ParamStore> params = load_params_f32(dir, config);
  if (config.vocab < 256)
    throw UsageError("the checkpoint's vocabulary has " + std::to_string(config.vocab) +
                     " tokens; byte-level prompts need 256");
  if (cli.get_int("top-k") > config.vocab)
    throw UsageError("--top-k " + std::to_string(cli.get_int("top-k")) + " exceeds the checkpoint's vocabulary of " +
                     std::to_string(config.vocab) + " tokens (--top-k 0 draws among all of them)");
  std::vector<std::int32_t> prompt_ids;
  for (const char c : prompt_text) prompt_ids.push_back(static_cast<unsigned char>(c));
  const SamplingSettings settings{cli.get_float("temperature"), cli.get_int("top-k"),
                                  static_cast<std::uint64_t>(cli.get_int("seed"))};
  const std::int64_t n = cli.get_int("tokens");
  const Generation g = generate(*params, prompt_ids, n, settings);

  const double tokens_per_second = g.decode_seconds > 0 ? static_cast<double>(n) / g.decode_seconds : 0;
  if (cli.get_flag("json")) {
    JsonWriter j;
    j.begin_object().field("checkpoint", dir).field("model", config.name).field("prompt", prompt_text);
    j.field("text", as_text(g.tokens)).key("tokens").begin_array();
    for (const std::int32_t t : g.tokens) j.value(static_cast<std::int64_t>(t));
    j.end_array();
    j.field("temperature", settings.temperature).field("top_k", settings.top_k).field("seed", cli.get_int("seed"));
    j.field("cache_bytes", g.cache_bytes).field("prefill_seconds", g.prefill_seconds);
    j.field("decode_seconds", g.decode_seconds).field("tokens_per_second", tokens_per_second);
    j.end_object();
    std::cout << j.str() << '\n';
    return 0;
  }
  std::printf("%s%s\n", as_text(prompt_ids).c_str(), as_text(g.tokens).c_str());
  std::printf("-- %s: %zu prompt + %lld new tokens, %.1f tokens/s; KV cache %.1f KiB\n", config.str().c_str(),
              prompt_ids.size(), static_cast<long long>(n), tokens_per_second,
              static_cast<double>(g.cache_bytes) / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run_tool(argc, argv, sample_main); }
