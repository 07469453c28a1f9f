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
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/03_grad_accumulation/accumulation.hpp"
#include "chapters/03_grad_accumulation/big_batch_comparison.hpp"
#include "common/io/checkpoint.hpp"
#include "common/json.hpp"
#include "common/report/table.hpp"
#include "common/runtime.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/matmul_peak.hpp"
#include "common/train/step_progress.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"

namespace {

using namespace usp;
using namespace usp::ch03;

// Part 1, one row per k: the terminal table, accumulation.csv and summary.json's "comparisons".
report::Table comparison_table() {
  constexpr double kMiB = 1048576.0;
  return report::Table({
      {.key = "k", .header = "k", .format = "%3lld"},
      {.key = "mbs", .header = "", .json = false},
      {.key = "global_batch", .header = "batch", .format = " %6lld", .json = false},
      {.key = "loss_accumulated", .header = "loss", .format = " %12.6f"},
      {.key = "loss_big", .header = ""},
      {.key = "max_grad_diff", .header = "max|Δgrad|", .format = " %12.3g"},
      {.key = "max_grad", .header = "", .json = false},
      {.key = "max_param_diff", .header = "", .csv = false},
      {.key = "max_param_diff_conditioned", .header = "max|Δparam|*", .format = " %14.3g", .json = false},
      {.key = "peak_activation_accumulated", .header = "peak act. acc", .format = " %11.2f MiB", .scale = 1 / kMiB,
       .header_width = 14},
      {.key = "peak_activation_big", .header = "peak act. big", .format = " %11.2f MiB", .scale = 1 / kMiB,
       .header_width = 14},
  });
}

void add_comparison(report::Table& t, const BigBatchComparison& c) {
  t.add({c.k, c.mbs, c.k * c.mbs, c.loss_accumulated, c.loss_big, c.max_grad_diff, c.max_grad, c.max_param_diff,
         c.max_param_diff_conditioned, c.peak_activation_accumulated, c.peak_activation_big});
}

// Part 2's run: the losses of every step (a resumed run's saved ones first), the wall time of
// the steps this run took, and the held-out losses it evaluated (after steps val_steps).
struct Training {
  std::vector<double> losses;
  std::int64_t first_step = 0;
  double seconds = 0;
  std::vector<std::int64_t> val_steps;
  std::vector<double> val_losses;
};

// --resume DIR: the checkpoint must describe this run (same shape, data, sequence, global batch
// and seed) and stop before --steps. Checked before any work, so a wrong checkpoint is reported
// at once rather than after part 1.
TrainerState check_resume(Runtime& rt, const std::string& dir, const TrainingConfig& cfg, std::int64_t global_batch) {
  TrainerState state;
  rt.agree([&] {
    state = load_trainer_state(dir);
    const ModelConfig saved = load_config(dir);
    if (saved.num_parameters() != cfg.model.num_parameters() || saved.layers != cfg.model.layers ||
        saved.hidden != cfg.model.hidden || saved.heads != cfg.model.heads || saved.kv_heads != cfg.model.kv_heads)
      throw UsageError("--resume " + dir + " holds a different model (" + saved.str() + ")");
    if (state.data != cfg.data || state.seq != cfg.seq || state.global_batch != global_batch || state.seed != cfg.seed)
      throw UsageError("--resume " + dir + " was saved with --data " + state.data + " --seq " +
                       std::to_string(state.seq) + ", a global batch of " + std::to_string(state.global_batch) +
                       " and --seed " + std::to_string(state.seed) + "; run with the same");
    if (state.step >= cfg.steps)
      throw UsageError("--resume " + dir + " is already at step " + std::to_string(state.step) +
                       "; ask for more --steps");
  });
  return state;
}

// The training part; with `resume` (checked by check_resume) it continues from that checkpoint.
Training train(Runtime& rt, const Cli& cli, const TrainingConfig& cfg, const Dataset& data, std::int64_t grad_acc,
               const ProgressFlags& progress, const std::optional<TrainerState>& resume) {
  ParamStore params(cfg.model, cfg.dtype, cfg.device);
  params.init(cfg.seed);
  Model model(params, cfg.model_options());
  AdamW optimizer(params, cfg.adamw);
  Training run;
  const std::string save = cli.get_string("save");
  if (resume) {
    const std::string dir = cli.get_string("resume");
    rt.agree([&] {
      load_params(dir, params);
      load_optimizer(dir, optimizer);
    });
    std::cout << "  resumed from " << dir << " at step " << resume->step << "\n";
    run.first_step = resume->step;
    run.losses = resume->losses;
  }
  const double peak = progress.quiet ? 0 : matmul_peak_flops(cfg.device);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t step = run.first_step; step < cfg.steps; ++step) {
    const auto ts = std::chrono::steady_clock::now();
    std::vector<Batch> micro;
    for (std::int64_t j = 0; j < grad_acc; ++j) micro.push_back(data.batch(step, j * cfg.mbs, cfg.mbs, cfg.seq));
    run.losses.push_back(accumulation_step(model, optimizer, micro));
    require_finite_loss(run.losses.back(), step);
    synchronize(cfg.device);
    StepProgress line{step, run.losses.back(), std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count(),
                      grad_acc * cfg.tokens_per_micro_batch(), 1,
                      static_cast<double>(grad_acc * model.flops().model()), peak};
    if (progress.evaluates(step, cfg.steps)) {
      line.val_loss = validation_loss(model, data, progress.eval_batches, cfg.mbs, cfg.seq);
      require_finite_loss(line.val_loss, step, "validation loss");
      run.val_steps.push_back(step);
      run.val_losses.push_back(line.val_loss);
    }
    if (!progress.quiet) print_progress_line("  ", line);
  }
  synchronize(cfg.device);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!save.empty()) {
    const TrainerState state{cfg.steps, cfg.seed, cfg.data, cfg.seq, grad_acc * cfg.mbs, run.losses};
    save_checkpoint(save, params, &optimizer, &state);
    std::cout << "  saved a checkpoint to " << save << " (build/bin/usp_eval --checkpoint " << save
              << " --text FILE evaluates it)\n";
  }
  return run;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch03_grad_accumulation", {"usp-small", 128, 4, 5, 3e-3},
                         "k micro-batches give the one-big-batch update at one micro-batch's activation memory");
  cli.add_int("grad-acc", 4, "micro-batches per optimizer step in the training part", 1, 1024);
  cli.add_string("accum-list", "1,2,4,8", "the k values of the equivalence part, comma-separated");
  cli.add_string("save", "", "after training, save a checkpoint (weights, optimizer, trainer state) to this folder");
  cli.add_string("resume", "", "continue the training part from a checkpoint saved with --save, up to --steps");
  add_progress_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const TrainingInputs in = agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda);
  const TrainingConfig& cfg = in.config;
  std::vector<std::int64_t> ks;
  rt.agree([&] { ks = parse_size_list(cli.get_string("accum-list"), "--accum-list", 1, 1024); });
  rt.require(rt.size() == 1, "chapter 03 runs on one device: launch it without mpirun (or with -np 1)");
  const std::string out = cli.get_string("out");
  const std::int64_t grad_acc = cli.get_int("grad-acc");
  ProgressFlags progress;
  rt.agree([&] {
    progress = progress_flags_from(cli);
    if (progress.eval_every > 0) check_validation_data(*in.data, progress.eval_batches, cfg.mbs, cfg.seq);
  });
  std::optional<TrainerState> resume;
  if (const std::string dir = cli.get_string("resume"); !dir.empty())
    resume = check_resume(rt, dir, cfg, grad_acc * cfg.mbs);
  std::cout << "ch03_grad_accumulation: " << cfg.model.str() << ", seq " << cfg.seq << ", micro-batch " << cfg.mbs
            << ", " << dtype_name(cfg.dtype) << ", on " << cfg.device.str() << "\n\n1. k micro-batches of " << cfg.mbs
            << " vs one batch of k·" << cfg.mbs << " (one AdamW step from the same weights)\n";

  make_dirs(out);
  report::Table comparisons = comparison_table();
  comparisons.print_header(std::cout);
  for (std::int64_t k : ks) {
    add_comparison(comparisons, compare_with_big_batch(cfg, *in.data, k));
    comparisons.print_row(std::cout, comparisons.rows() - 1);
  }
  comparisons.write_csv(out + "/accumulation.csv");
  std::cout << "  * over the weights whose gradient is at least 1e-3 of the largest: Adam's first step,\n"
               "    lr·g/(|g| + eps), is sign-like and amplifies rounding where g is near 0\n";

  std::cout << "\n2. training: " << cfg.steps << " steps of " << grad_acc << " micro-batches × " << cfg.mbs
            << " samples (global batch " << grad_acc * cfg.mbs << ")\n";
  const Training run = train(rt, cli, cfg, *in.data, grad_acc, progress, resume);

  JsonWriter results;
  results.begin_object().key("comparisons");
  comparisons.write_json(results);
  results.field("grad_acc", grad_acc).field("global_batch", grad_acc * cfg.mbs);
  write_validation_json(results, run.val_steps, run.val_losses);
  results.end_object();
  const double tokens = static_cast<double>((cfg.steps - run.first_step) * grad_acc * cfg.tokens_per_micro_batch());
  write_training_summary(rt.world(), out + "/summary.json",
                         {.chapter = "03_grad_accumulation", .losses = run.losses, .tokens_per_second = tokens / run.seconds,
                          .flags_json = cli.values_json(), .chapter_json = results.str()});
  std::cout << "\nwrote " << out << "/summary.json and accumulation.csv\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
