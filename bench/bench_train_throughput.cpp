// bench_train_throughput: tokens per second of full training steps of the course's model on the
// CPU or a GPU, on the synthetic corpus: zero_grad, forward, backward, AdamW step (batches are
// drawn outside the timed region; on a GPU each step ends with a device synchronisation).
// bench/train_throughput_torch.py times the same model, batch and optimizer in PyTorch (eager or
// torch.compile); bench/compare_torch.sh runs them side by side.
//
// --precision bf16 is the course's mixed precision: bf16 weights, activations and gradients,
// fp32 master weights and Adam states (PyTorch's side runs autocast to bf16 over fp32 weights).
// Threads: whatever OpenBLAS is given (OPENBLAS_NUM_THREADS); the other CPU ops run on one.
// Prints one line per timed step, then a summary ending in
//   tokens_per_second <value>        timed steps' tokens / their wall-clock seconds
//   cpu_tokens_per_second <value>    the same over the process's CPU seconds (all threads):
//                                    with one thread, what the speed would be on an idle
//                                    machine, as time slices lost to other jobs do not count
//   mfu <value>                      with --peak-tflops P: the model FLOPs of a step (the ops'
//                                    own count: 6·N per token for the matmuls plus attention's
//                                    products, recomputation excluded) per second over P
// (what compare_torch.sh reads), or with --json a single JSON object.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

#include "common/cli.hpp"
#include "common/data/dataset.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/json.hpp"
#include "common/model/config.hpp"
#include "common/model/model.hpp"
#include "common/model/params.hpp"
#include "common/optim/adamw.hpp"
#include "common/report/median.hpp"
#include "common/tensor.hpp"
#include "common/tool_main.hpp"

using namespace usp;

namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void add_flags(Cli& cli) {
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
      .add_choice("precision", "f32", {"f32", "bf16"}, "f32, or bf16 with fp32 master weights")
      .add_string("device", "cpu", "cpu | cuda | cuda:N")
      .add_int("vocab", 256, "vocabulary (the synthetic corpus uses the first 256 ids)", 256)
      .add_float("peak-tflops", 0.0, "the device's peak rate for MFU (e.g. 989 for an H100's bf16; 0: no MFU)", 0.0)
      .add_flag("tied", "tie lm_head to the embedding")
      .add_flag("json", "print one JSON object instead of text");
}

ModelConfig model_from(const Cli& cli) {
  ModelConfig cfg;
  cfg.name = "bench";
  cfg.hidden = cli.get_int("hidden");
  cfg.layers = cli.get_int("layers");
  cfg.heads = cli.get_int("heads");
  cfg.kv_heads = cli.get_int("kv-heads");
  cfg.ffn = cli.get_int("ffn");
  cfg.vocab = cli.get_int("vocab");  // the synthetic corpus draws ids below 256
  cfg.tied_embeddings = cli.get_flag("tied");
  cfg.max_seq = std::max(cfg.max_seq, cli.get_int("seq"));
  cfg.validate();
  return cfg;
}

// What the timed steps measured.
struct Timing {
  std::vector<double> seconds;  // wall time of each timed step
  double cpu_seconds = 0;       // process CPU time over the timed steps
  double loss = 0;              // the last step's
  double model_flops = 0;       // per step
};

// warmup untimed steps, then `steps` timed ones: zero_grad, forward, backward, AdamW.
Timing run_steps(ParamStore& params, Model& model, AdamW& optimizer, const Dataset& data, Device device,
                 std::int64_t B, std::int64_t T, std::int64_t warmup, std::int64_t steps, bool quiet) {
  Timing t;
  for (std::int64_t s = 0; s < warmup + steps; ++s) {
    const Batch batch = data.batch(s, 0, B, T);  // inputs, targets [B, T] i32; not timed
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    params.zero_grad();
    t.loss = model.forward(batch.inputs, batch.targets);
    model.backward();
    optimizer.step(params);
    synchronize(device);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu_dt = process_cpu_seconds() - cpu_start;
    if (s < warmup) continue;
    t.model_flops = static_cast<double>(model.flops().forward + model.flops().backward);
    t.cpu_seconds += cpu_dt;
    t.seconds.push_back(dt);
    if (!quiet) std::printf("  step %3lld  loss %.4f  %.1f ms\n", static_cast<long long>(s - warmup), t.loss, dt * 1e3);
  }
  return t;
}

void print_results(const ModelConfig& cfg, const Timing& t, std::int64_t B, std::int64_t T, double peak, bool json) {
  const auto steps = static_cast<std::int64_t>(t.seconds.size());
  double total = 0;
  for (double s : t.seconds) total += s;
  const double median = report::median(t.seconds);
  const double tokens_per_second = static_cast<double>(B * T * steps) / total;
  const double cpu_tokens_per_second = static_cast<double>(B * T * steps) / t.cpu_seconds;
  const double mfu = peak > 0 ? t.model_flops * static_cast<double>(steps) / total / peak : 0.0;
  if (json) {
    JsonWriter w;
    w.begin_object()
        .field("implementation", "usp")
        .field("config", cfg.str())
        .field("parameters", cfg.num_parameters())
        .field("batch", B)
        .field("seq", T)
        .field("steps", steps)
        .field("final_loss", t.loss)
        .field("median_step_seconds", median)
        .field("tokens_per_second", tokens_per_second)
        .field("cpu_tokens_per_second", cpu_tokens_per_second)
        .field("model_flops_per_step", t.model_flops)
        .field("mfu", mfu)
        .end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("median step %.1f ms, mean %.1f ms\n", median * 1e3, total / static_cast<double>(steps) * 1e3);
    std::printf("tokens_per_second %.1f\n", tokens_per_second);
    std::printf("cpu_tokens_per_second %.1f\n", cpu_tokens_per_second);
    if (peak > 0) std::printf("mfu %.4f\n", mfu);
  }
}

int bench(int argc, char** argv) {
  Cli cli("bench_train_throughput",
          "Tokens per second of fp32 training steps (zero_grad, forward, backward, AdamW) on the CPU.");
  add_flags(cli);
  if (!parse_tool_flags(cli, argc, argv)) return 0;
  const ModelConfig cfg = model_from(cli);
  const std::int64_t B = cli.get_int("batch"), T = cli.get_int("seq");
  const auto seed = static_cast<std::uint64_t>(cli.get_int("seed"));
  const std::int64_t steps = cli.get_int("steps"), warmup = cli.get_int("warmup");
  const bool json = cli.get_flag("json");
  const Device device = parse_device(cli.get_string("device"));
  const DType dtype = cli.get_string("precision") == "bf16" ? DType::bf16 : DType::f32;

  ParamStore params(cfg, dtype, device);
  params.init(seed);
  Model model(params, {parse_recompute(cli.get_string("recompute")), dtype});
  AdamW optimizer(params, AdamWConfig{});  // lr 3e-3, betas (0.9, 0.95), eps 1e-8, wd 0.1
  const auto data = make_dataset("synthetic", seed);
  if (!json)
    std::printf("bench_train_throughput: %s, %lld parameters, %s on %s, batch %lld x %lld tokens, %lld warmup + %lld "
                "timed steps\n",
                cfg.str().c_str(), static_cast<long long>(cfg.num_parameters()), dtype_name(dtype),
                device.str().c_str(), static_cast<long long>(B), static_cast<long long>(T),
                static_cast<long long>(warmup), static_cast<long long>(steps));
  const Timing t = run_steps(params, model, optimizer, *data, device, B, T, warmup, steps, json);
  print_results(cfg, t, B, T, cli.get_float("peak-tflops") * 1e12, json);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run_tool(argc, argv, bench); }
