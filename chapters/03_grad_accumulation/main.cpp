// ch03_grad_accumulation: the playbook's "Gradient accumulation" on one device.
//
//   1. Equivalence: for k = 1, 2, 4, 8 (--accum-list), one optimizer step on k micro-batches of
//      b samples (exercise 03.1) against one step on a single batch of k·b samples, from the
//      same weights: the gradients and the updated weights agree to fp32 rounding, while the
//      peak activation memory stays that of ONE micro-batch instead of growing with k·b.
//   2. Training: --steps steps of global batch = mbs × grad-acc samples; --save DIR writes a
//      checkpoint (Hugging Face Llama format + optimizer and trainer state), --resume DIR
//      continues one: the resumed run's losses equal the uninterrupted run's, bit for bit.
// Writes <out>/summary.json and accumulation.csv (plots/ch03_accumulation.py draws it).
//
//   build/bin/ch03_grad_accumulation [--mbs 4] [--grad-acc 4] [--accum-list 1,2,4,8] [--steps 5]
//   ./usp run 03
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/03_grad_accumulation/accumulation.hpp"
#include "chapters/03_grad_accumulation/big_batch_comparison.hpp"
#include "common/io/checkpoint.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_summary.hpp"

namespace {

using namespace usp;
using namespace usp::ch03;

std::vector<std::int64_t> parse_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::int64_t v = parse_size(item, "--accum-list");
    if (v < 1 || v > 1024) throw UsageError("--accum-list values must be in 1..1024, got " + item);
    out.push_back(v);
  }
  if (out.empty()) throw UsageError("--accum-list must name at least one k, e.g. 1,2,4");
  return out;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch03_grad_accumulation", "k micro-batches give the one-big-batch update at one micro-batch's activation memory");
  cli.add_common("out/03_grad_accumulation");
  add_training_flags(cli, {"usp-small", 128, 4, 5, 3e-3});
  cli.add_int("grad-acc", 4, "micro-batches per optimizer step in the training part", 1, 1024);
  cli.add_string("accum-list", "1,2,4,8", "the k values of the equivalence part, comma-separated");
  cli.add_string("save", "", "after training, save a checkpoint (weights, optimizer, trainer state) to this folder");
  cli.add_string("resume", "", "continue the training part from a checkpoint saved with --save, up to --steps");
  if (!rt.parse(cli, argc, argv)) return 0;
  TrainingConfig cfg;
  std::unique_ptr<Dataset> data;
  std::vector<std::int64_t> ks;
  rt.agree([&] {
    cfg = training_config_from(cli);
    data = open_training_data(cfg);
    ks = parse_list(cli.get_string("accum-list"));
  });
  rt.require(rt.size() == 1, "chapter 03 runs on one device: launch it without mpirun (or with -np 1)");
  const std::string out = cli.get_string("out");
  const std::int64_t grad_acc = cli.get_int("grad-acc");
  std::cout << "ch03_grad_accumulation: " << cfg.model.str() << ", seq " << cfg.seq << ", micro-batch " << cfg.mbs
            << ", " << dtype_name(cfg.dtype) << "\n\n1. k micro-batches of " << cfg.mbs
            << " vs one batch of k·" << cfg.mbs << " (one AdamW step from the same weights)\n";
  std::printf("  %3s %6s %12s %12s %14s %14s %14s\n", "k", "batch", "loss", "max|Δgrad|", "max|Δparam|*",
              "peak act. acc", "peak act. big");

  make_dirs(out);
  std::ofstream csv(out + "/accumulation.csv");
  csv << "k,mbs,global_batch,loss_accumulated,loss_big,max_grad_diff,max_grad,max_param_diff_conditioned,"
         "peak_activation_accumulated,peak_activation_big\n";
  JsonWriter results;
  results.begin_object().key("comparisons").begin_array();
  for (std::int64_t k : ks) {
    const BigBatchComparison c = compare_with_big_batch(cfg, *data, k);
    std::printf("  %3lld %6lld %12.6f %12.3g %14.3g %11.2f MiB %11.2f MiB\n", static_cast<long long>(k),
                static_cast<long long>(k * cfg.mbs), c.loss_accumulated, c.max_grad_diff, c.max_param_diff_conditioned,
                static_cast<double>(c.peak_activation_accumulated) / 1048576.0,
                static_cast<double>(c.peak_activation_big) / 1048576.0);
    csv << k << ',' << cfg.mbs << ',' << k * cfg.mbs << ',' << c.loss_accumulated << ',' << c.loss_big << ','
        << c.max_grad_diff << ',' << c.max_grad << ',' << c.max_param_diff_conditioned << ',' << c.peak_activation_accumulated
        << ',' << c.peak_activation_big << '\n';
    results.begin_object();
    results.field("k", k).field("loss_accumulated", c.loss_accumulated).field("loss_big", c.loss_big);
    results.field("max_grad_diff", c.max_grad_diff).field("max_param_diff", c.max_param_diff);
    results.field("peak_activation_accumulated", c.peak_activation_accumulated);
    results.field("peak_activation_big", c.peak_activation_big);
    results.end_object();
  }
  results.end_array();
  std::cout << "  * over the weights whose gradient is at least 1e-3 of the largest: Adam's first step,\n"
               "    lr·g/(|g| + eps), is sign-like and amplifies rounding where g is near 0\n";

  std::cout << "\n2. training: " << cfg.steps << " steps of " << grad_acc << " micro-batches × " << cfg.mbs
            << " samples (global batch " << grad_acc * cfg.mbs << ")\n";
  ParamStore params(cfg.model, cfg.dtype);
  params.init(cfg.seed);
  Model model(params, cfg.model_options());
  AdamW optimizer(params, cfg.adamw);
  std::vector<double> losses;
  std::int64_t first_step = 0;
  const std::string resume = cli.get_string("resume"), save = cli.get_string("save");
  if (!resume.empty()) {
    // The checkpoint must describe this run: same shape, data, sequence and global batch.
    TrainerState state;
    rt.agree([&] {
      state = load_trainer_state(resume);
      const ModelConfig saved = load_config(resume);
      if (saved.num_parameters() != cfg.model.num_parameters() || saved.layers != cfg.model.layers ||
          saved.hidden != cfg.model.hidden || saved.heads != cfg.model.heads || saved.kv_heads != cfg.model.kv_heads)
        throw UsageError("--resume " + resume + " holds a different model (" + saved.str() + ")");
      if (state.data != cfg.data || state.seq != cfg.seq || state.global_batch != grad_acc * cfg.mbs ||
          state.seed != cfg.seed)
        throw UsageError("--resume " + resume + " was saved with --data " + state.data + " --seq " +
                         std::to_string(state.seq) + ", a global batch of " + std::to_string(state.global_batch) +
                         " and --seed " + std::to_string(state.seed) + "; run with the same");
      if (state.step >= cfg.steps)
        throw UsageError("--resume " + resume + " is already at step " + std::to_string(state.step) +
                         "; ask for more --steps");
      load_params(resume, params);
      load_optimizer(resume, optimizer);
    });
    first_step = state.step;
    losses = state.losses;
    std::cout << "  resumed from " << resume << " at step " << first_step << "\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t step = first_step; step < cfg.steps; ++step) {
    std::vector<Batch> micro;
    for (std::int64_t j = 0; j < grad_acc; ++j) micro.push_back(data->batch(step, j * cfg.mbs, cfg.mbs, cfg.seq));
    losses.push_back(accumulation_step(model, optimizer, micro));
    std::printf("  step %3lld  loss %.4f\n", static_cast<long long>(step), losses.back());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!save.empty()) {
    const TrainerState state{cfg.steps, cfg.seed, cfg.data, cfg.seq, grad_acc * cfg.mbs, losses};
    save_checkpoint(save, params, &optimizer, &state);
    std::cout << "  saved a checkpoint to " << save << " (build/bin/usp_eval --checkpoint " << save
              << " --text FILE evaluates it)\n";
  }
  results.field("grad_acc", grad_acc).field("global_batch", grad_acc * cfg.mbs);
  results.end_object();

  TrainingSummary summary;
  summary.chapter = "03_grad_accumulation";
  summary.losses = losses;
  summary.tokens_per_second =
      static_cast<double>((cfg.steps - first_step) * grad_acc * cfg.tokens_per_micro_batch()) / seconds;
  summary.flags_json = cli.values_json();
  summary.chapter_json = results.str();
  write_training_summary(rt.world(), out + "/summary.json", summary);
  std::cout << "\nwrote " << out << "/summary.json and accumulation.csv\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
