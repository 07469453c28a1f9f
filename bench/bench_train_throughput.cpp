// bench_train_throughput: tokens per second of full fp32 training steps of the course's model
// on the CPU, on the synthetic corpus: zero_grad, forward, backward, AdamW step (batches are
// drawn outside the timed region). bench/train_throughput_torch.py times
// the same model, batch and optimizer in PyTorch; bench/compare_torch.sh runs both.
//
// Threads: whatever OpenBLAS is given (OPENBLAS_NUM_THREADS); the other ops run on one.
// Prints one line per timed step, then a summary ending in
//   tokens_per_second <value>        timed steps' tokens / their wall-clock seconds
//   cpu_tokens_per_second <value>    the same over the process's CPU seconds (all threads):
//                                    with one thread, what the speed would be on an idle
//                                    machine, as time slices lost to other jobs do not count
// (what compare_torch.sh reads), or with --json a single JSON object.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <vector>

#include "common/cli.hpp"
#include "common/data/dataset.hpp"
#include "common/error.hpp"
#include "common/json.hpp"
#include "common/model/config.hpp"
#include "common/model/model.hpp"
#include "common/model/params.hpp"
#include "common/optim/adamw.hpp"
#include "common/tensor.hpp"

using namespace usp;

namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int bench(int argc, char** argv) {
  Cli cli("bench_train_throughput",
          "Tokens per second of fp32 training steps (zero_grad, forward, backward, AdamW) on the CPU.");
  cli.add_int("hidden", 256, "hidden size", 1)
      .add_int("layers", 4, "decoder layers", 1)
      .add_int("heads", 8, "query heads", 1)
      .add_int("kv-heads", 4, "key/value heads (GQA)", 1)
      .add_int("ffn", 768, "SwiGLU intermediate size", 1)
      .add_int("seq", 128, "tokens per sample", 1)
      .add_int("batch", 8, "samples per step", 1)
      .add_int("steps", 10, "timed steps", 1)
      .add_int("warmup", 2, "untimed steps first", 0)
      .add_int("seed", 1234, "initialisation and token seed", 0)
      .add_choice("recompute", "none", {"none", "selective", "full"}, "activation recomputation")
      .add_flag("tied", "tie lm_head to the embedding")
      .add_flag("json", "print one JSON object instead of text");
  cli.parse(argc, argv);
  if (cli.help_requested()) {
    std::printf("%s", cli.help().c_str());
    return 0;
  }

  ModelConfig cfg;
  cfg.name = "bench";
  cfg.hidden = cli.get_int("hidden");
  cfg.layers = cli.get_int("layers");
  cfg.heads = cli.get_int("heads");
  cfg.kv_heads = cli.get_int("kv-heads");
  cfg.ffn = cli.get_int("ffn");
  cfg.vocab = 256;  // the synthetic corpus's byte-level vocabulary
  cfg.tied_embeddings = cli.get_flag("tied");
  const std::int64_t B = cli.get_int("batch"), T = cli.get_int("seq");
  cfg.max_seq = std::max(cfg.max_seq, T);
  cfg.validate();
  const auto seed = static_cast<std::uint64_t>(cli.get_int("seed"));
  const std::int64_t steps = cli.get_int("steps"), warmup = cli.get_int("warmup");
  const bool json = cli.get_flag("json");

  ParamStore params(cfg);
  params.init(seed);
  Model model(params, {parse_recompute(cli.get_string("recompute")), DType::f32});
  AdamW optimizer(params, AdamWConfig{});  // lr 3e-3, betas (0.9, 0.95), eps 1e-8, wd 0.1
  const auto data = make_dataset("synthetic", seed);

  if (!json)
    std::printf("bench_train_throughput: %s, %lld parameters, batch %lld x %lld tokens, %lld warmup + %lld timed steps\n",
                cfg.str().c_str(), static_cast<long long>(cfg.num_parameters()), static_cast<long long>(B),
                static_cast<long long>(T), static_cast<long long>(warmup), static_cast<long long>(steps));
  std::vector<double> seconds;
  double cpu_seconds = 0;
  double loss = 0;
  for (std::int64_t s = 0; s < warmup + steps; ++s) {
    const Batch batch = data->batch(s, 0, B, T);  // inputs, targets [B, T] i32; not timed
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    params.zero_grad();
    loss = model.forward(batch.inputs, batch.targets);
    model.backward();
    optimizer.step(params);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu_dt = process_cpu_seconds() - cpu_start;
    if (s < warmup) continue;
    cpu_seconds += cpu_dt;
    seconds.push_back(dt);
    if (!json) std::printf("  step %3lld  loss %.4f  %.1f ms\n", static_cast<long long>(s - warmup), loss, dt * 1e3);
  }

  double total = 0;
  for (double t : seconds) total += t;
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double tokens_per_second = static_cast<double>(B * T * steps) / total;
  const double cpu_tokens_per_second = static_cast<double>(B * T * steps) / cpu_seconds;
  if (json) {
    JsonWriter w;
    w.begin_object()
        .field("implementation", "usp")
        .field("config", cfg.str())
        .field("parameters", cfg.num_parameters())
        .field("batch", B)
        .field("seq", T)
        .field("steps", steps)
        .field("final_loss", loss)
        .field("median_step_seconds", median)
        .field("tokens_per_second", tokens_per_second)
        .field("cpu_tokens_per_second", cpu_tokens_per_second)
        .end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("median step %.1f ms, mean %.1f ms\n", median * 1e3, total / static_cast<double>(steps) * 1e3);
    std::printf("tokens_per_second %.1f\n", tokens_per_second);
    std::printf("cpu_tokens_per_second %.1f\n", cpu_tokens_per_second);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train_throughput: fatal: %s\n", e.what());
    return 1;
  }
}
