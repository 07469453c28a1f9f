// usp_eval: the mean next-token loss of a checkpoint on a text file.
//
//   usp_eval --checkpoint DIR --text FILE [--seq 256] [--batch 8] [--json]
//
// DIR is a checkpoint as save_checkpoint writes it (config.json + model.safetensors, Hugging
// Face Llama names; common/io/checkpoint.hpp). The text is tokenised byte-level (token = byte)
// and cut into every non-overlapping window of seq + 1 bytes in file order; the loss is the
// mean cross-entropy of the seq predictions of every window, in nats per token (= per byte).
// bf16 checkpoints are widened to fp32 (exactly) and evaluated in fp32, like fp32 ones.
//
// Prints three lines, or with --json one object with at least "loss" (also "windows",
// "tokens", "bits_per_byte", "perplexity", the model and the inputs). A bad flag, a missing
// or malformed checkpoint, or a text shorter than seq + 1 bytes: "error: ..." and exit 2.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "common/data/text_eval.hpp"
#include "common/io/checkpoint.hpp"
#include "common/json.hpp"
#include "common/number_text.hpp"
#include "common/runtime.hpp"

using namespace usp;

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](Runtime& rt) {
    Cli cli("usp_eval", "mean next-token loss of a checkpoint on a text file (byte-level tokens)");
    cli.add_string("checkpoint", "", "checkpoint directory (config.json + model.safetensors)");
    cli.add_string("text", "", "text file to evaluate; token = byte");
    cli.add_int("seq", 256, "predicted tokens per window (windows are seq + 1 bytes)", 1, std::int64_t{1} << 20);
    cli.add_int("batch", 8, "windows per forward pass", 1, std::int64_t{1} << 16);
    cli.add_flag("json", "print one JSON object instead of text");
    if (!rt.parse(cli, argc, argv)) return 0;
    const std::string dir = cli.get_string("checkpoint"), text_path = cli.get_string("text");
    const std::int64_t seq = cli.get_int("seq"), batch = cli.get_int("batch");
    rt.require(!dir.empty(), "--checkpoint DIR is required (see --help)");
    rt.require(!text_path.empty(), "--text FILE is required (see --help)");

    std::unique_ptr<ParamStore> params;
    std::unique_ptr<TextCorpus> text;
    DType stored = DType::f32;
    rt.agree([&] {
      params = load_params_f32(dir, load_config(dir));
      stored = load_dtype(dir);
      text = std::make_unique<TextCorpus>(text_path, /*seed=*/0);  // the seed is unused by evaluation
      text->check_seq(seq);
      if (seq > params->config().max_seq)
        throw UsageError("--seq " + std::to_string(seq) + " exceeds the checkpoint's max_position_embeddings " +
                         std::to_string(params->config().max_seq));
    });

    Model model(*params);
    const TextLoss r = evaluate_text(model, *text, seq, batch);
    if (!rt.is_root()) return 0;

    const double bits = r.mean_loss / std::log(2.0), perplexity = std::exp(r.mean_loss);
    const char* dtype_text = stored == DType::f32 ? "float32" : stored == DType::bf16 ? "bfloat16" : "float16";
    if (cli.get_flag("json")) {
      JsonWriter w;
      w.begin_object();
      w.field("checkpoint", dir).field("text", text_path).field("model", params->config().name);
      w.field("dtype", dtype_text).field("parameters", params->numel());
      w.field("seq", seq).field("batch", batch).field("text_bytes", text->size());
      w.field("windows", r.windows).field("tokens", r.tokens);
      w.field("loss", r.mean_loss).field("bits_per_byte", bits).field("perplexity", perplexity);
      w.end_object();
      std::cout << w.str() << std::endl;
    } else {
      std::printf("checkpoint %s: %s (%s, %lld parameters)\n", dir.c_str(), params->config().str().c_str(), dtype_text,
                  static_cast<long long>(params->numel()));
      std::printf("text %s: %s, %s of %lld bytes (%s)\n", text_path.c_str(), count_text(text->size(), "byte").c_str(),
                  count_text(r.windows, "window").c_str(), static_cast<long long>(seq + 1),
                  count_text(r.tokens, "predicted token").c_str());
      std::printf("mean loss %.6f nats/token (%.4f bits/byte, perplexity %.3f)\n", r.mean_loss, bits, perplexity);
    }
    return 0;
  });
}
