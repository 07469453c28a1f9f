// ch09_expert_parallel: the playbook's "Expert parallelism" on the run's W ranks.
//
//   A mixture-of-experts model (--experts E per layer, each token to its --top-k, a capacity or
//   dropless, the load-balancing loss) trained data-parallel on W ranks, its experts spread over
//   groups of ep ranks (--ep, each value dividing W and E): every MoE layer sends each token row to
//   the rank of its expert with an all-to-all-v and gets the result back the same way.
//   1. The losses of each ep, side by side: the same (every ep computes the same step).
//   2. Tokens per expert (computed and routed), the imbalance max/mean and the drops, with the
//      load-balancing loss and without it (--aux both: at ep = W), over --steps steps.
//   3. Per rank: all-to-all bytes per step, parameters held (the experts' share shrinks with ep),
//      peak memory; the step time.
//   Each step prints the progress line (variant_runner.hpp); --eval-every N evaluates the held-out
//   loss every N steps in each variant's layout (ep_run.hpp: the tokens travel to the experts'
//   ranks as in training; --eval-batches a multiple of W), outside its memory and all-to-all bytes
//   (summary.json's results.validation: the first variant's, as its losses).
// Writes <out>/summary.json, tokens_per_expert.csv (plots/ch09_tokens_per_expert.py) and
// ep_ranks.csv (plots/ch09_a2a_bytes.py).
//
//   mpirun -np 4 build/bin/ch09_expert_parallel [--ep 1,4] [--experts 8 --top-k 2]
//                                                [--capacity-factor 1.25 | --dropless] [--aux both]
//                                                [--save DIR]   (then: usp_eval --checkpoint DIR --text FILE)
//                                                [--eval-every 5] [--quiet]
//   ./usp run 09
#include <iostream>
#include <string>
#include <vector>

#include "chapters/09_expert_parallel/ep_report.hpp"
#include "chapters/09_expert_parallel/ep_run.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/each_variant.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"
#include "common/train/variant_runner.hpp"

namespace {

using namespace usp;
using namespace usp::ch09;

struct Setup {
  TrainingInputs in;
  std::vector<EpVariant> variants = {};
  ProgressFlags progress = {};  // --quiet, --eval-every, --eval-batches
};

Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s{agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda_ranks)};
  rt.agree([&] {
    const int W = rt.size();
    const ModelConfig& model = s.in.config.model;
    std::vector<int> eps = cli.given("ep") ? parse_int_list(cli.get_string("ep"), "--ep", 1, ModelConfig::kMaxExperts,
                                                            Repeats::refused)
                                           : (W > 1 ? std::vector<int>{1, W} : std::vector<int>{1});
    const std::string aux = cli.get_string("aux");
    if (aux == "off" && cli.given("aux-coef"))
      throw UsageError("--aux-coef weighs the load-balancing loss, and --aux off runs without it");
    const std::int64_t k = cli.get_int("grad-acc");
    for (int ep : eps) {
      check_ep_layout({W, ep}, W, model);
      if (aux != "off") s.variants.push_back({{W, ep}, true, k});
    }
    // The balancing study: the largest ep without the aux loss (or every ep with --aux off).
    if (aux == "both") s.variants.push_back({{W, eps.back()}, false, k});
    if (aux == "off")
      for (int ep : eps) s.variants.push_back({{W, ep}, false, k});
    s.progress = progress_flags_from(cli);
    if (s.progress.eval_every > 0) {
      check_ep_eval_batches(s.progress.eval_batches, W);
      check_validation_data(*s.in.data, s.progress.eval_batches, s.in.config.mbs, s.in.config.seq);
    }
  });
  return s;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch09_expert_parallel", {"usp-small", 64, 2, 30, 3e-3},
      "expert parallelism: a mixture of experts whose experts are spread over ranks, token rows exchanged with "
      "all-to-all-v");
  // The aux coefficient: Switch and Mixtral use 0.01 over many thousand steps; this short run
  // needs 0.1 for the balancing to show within 30 steps (the lesson's measurement).
  add_moe_flags(cli, {8, 2, 0.1});
  cli.add_string("ep", "1,W", "expert-parallel sizes to run side by side, comma-separated (each dividing W and E)");
  cli.add_choice("aux", "both", {"both", "on", "off"},
                 "the load-balancing loss: on, off, or both (the largest ep also runs without it)");
  cli.add_int("grad-acc", 1, "micro-batches per rank per optimizer step", 1, 1024);
  cli.add_string("save", "", "save the first variant's trained model here: one Mixtral checkpoint (usp_eval loads it)");
  add_progress_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const Setup setup = read_setup(rt, cli);
  const TrainingConfig& cfg = setup.in.config;
  const int W = rt.size();
  const std::string out = cli.get_string("out");
  if (rt.is_root()) {
    std::cout << "ch09_expert_parallel: " << cfg.model.str() << " (" << cfg.model.num_parameters()
              << " parameters, " << cfg.model.active_parameters() << " active per token), capacity "
              << (cfg.model.capacity_factor > 0 ? "factor " + std::to_string(cfg.model.capacity_factor) : "none (dropless)")
              << ", aux coefficient " << cfg.model.router_aux_loss_coef << "\n  W = " << W << " data-parallel rank(s), "
              << cfg.mbs << " × " << cfg.seq << " tokens per micro-batch, " << setup.variants.front().micro_batches
              << " per rank and step, " << cfg.steps << " AdamW steps per variant, on " << cfg.device.str() << "\n";
    if (W == 1)
      std::cout << "  note: on one rank every expert is here (ep = 1). Run it on several ranks:\n"
                   "        mpirun -np 4 build/bin/ch09_expert_parallel (or ./usp run 09)\n";
  }
  // The variants' tensors over the CPU world or a device communicator, which the mesh splits into
  // the ep and dp groups; everything else over metrics (common/train/training_comms.hpp); the
  // steps through the runner (variant_runner.hpp).
  TrainingComms comms(rt, cfg);
  const double tokens_per_step =
      static_cast<double>(W * setup.variants.front().micro_batches * cfg.tokens_per_micro_batch());
  VariantRunner runner(comms.metrics(), {cfg, static_cast<std::int64_t>(tokens_per_step), setup.progress, out});
  make_dirs(out);
  std::vector<EpResult> results;
  const bool trained = train_each_variant(
      rt, setup.variants.size(), "the variants: skipped until exercises 09.1 and 09.2 are written", [&](std::size_t i) {
        const EpVariant& v = setup.variants[i];
        const std::string save = i == 0 ? cli.get_string("save") : std::string();
        results.push_back(run_ep_variant(runner, comms.tensors(), comms.metrics(), cfg, *setup.in.data, v, save,
                                         setup.progress.held_out_batches()));
        if (!save.empty() && rt.is_root()) std::cout << "saved the model trained by " << v.label() << " to " << save << "\n";
      });
  if (!trained) return 0;
  if (rt.is_root()) {
    print_losses(std::cout, results);
    print_routing(std::cout, results, cfg.model);
    print_ranks(std::cout, results, cfg);
    tokens_table(results, cfg.model).write_csv(out + "/tokens_per_expert.csv");
    ranks_table(results).write_csv(out + "/ep_ranks.csv");
  }
  JsonWriter j;
  j.begin_object().field("world", W).field("experts", cfg.model.experts).field("top_k", cfg.model.experts_per_token);
  j.field("capacity_factor", cfg.model.capacity_factor).field("num_parameters", cfg.model.num_parameters());
  j.field("active_parameters", cfg.model.active_parameters());
  write_variants_json(j, results, cfg.model);
  const EpResult& first = results.front();
  write_validation_json(j, first.val_steps, first.val_losses);
  j.end_object();
  write_training_summary(rt.world(), out + "/summary.json",
                         {.chapter = "09_expert_parallel", .losses = first.losses,
                          .tokens_per_second = tokens_per_step / first.median_step_seconds(), .dp = W,
                          .ep = first.variant.layout.ep, .flags_json = cli.values_json(), .chapter_json = j.str()});
  if (rt.is_root())
    std::cout << "\nwrote " << out << "/summary.json, tokens_per_expert.csv, ep_ranks.csv\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
