// ch07_context_parallel: the playbook's "Context Parallelism" on the run's W ranks: CPU ranks, or with
// --device cuda a GPU per rank (the groups over NCCL, or MPI through host memory: --backend).
//
//   1. The variants side by side: every sequence split over cp ranks (--cp, default W; the other
//      W / cp ranks are data-parallel replicas), its attention computed by a ring of K/V blocks,
//      an all-gather of K/V or an all-to-all to a head split (--attention), the tokens laid out in
//      contiguous or zig-zag chunks (--sharding). Each trains the same steps on the same global
//      batch from the same initial weights, so the losses agree.
//   2. The work of each rank's attention: the blocks of the causal mask it computed and its
//      compute time. Contiguous chunks give the last rank W blocks and the first one; zig-zag
//      balances them (plots/ch07_mask_by_rank.py, plots/ch07_attention_time.py).
//   3. Each rank's memory by category, and what one attention forward holds: the all-gather the
//      whole sequence's K/V, the ring two blocks.
//   4. The bytes each rank sends per step, by collective, against the count (cp_formulas.hpp).
//   5. The step time, and a trace of each variant's last step: the ring's sends and receives run
//      while it computes; the fraction of their time hidden that way.
//   Each step prints the progress line (variant_runner.hpp); --eval-every N evaluates the held-out
//   loss every N steps in each variant's layout (cp_run.hpp: every cp rank its tokens, through the
//   variant's attention), outside its memory, traffic and attention work (summary.json's
//   results.validation: the last variant's, as its losses).
//   6. The calculator's Llama-3.1 8B at CP 1, 2, 4 and 8 up to 131072 tokens (plots/ch07_cp_memory.py).
// Writes <out>/summary.json, cp_variants.csv, attention_blocks.csv, the traces
// trace_<attention>_<sharding>.{json,csv} and cp_memory.csv.
//
//   mpirun -np 4 build/bin/ch07_context_parallel [--cp 4] [--attention ring,all-gather,all-to-all]
//                                                [--sharding contiguous,zig-zag] [--grad-acc 1]
//                                                [--eval-every 2] [--quiet]
//   ./usp run 07
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "chapters/07_context_parallel/cp_report.hpp"
#include "chapters/07_context_parallel/cp_run.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/each_variant.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/validation_loss.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/variant_runner.hpp"

namespace {

using namespace usp;
using namespace usp::ch07;

struct Setup {
  TrainingInputs in;
  int cp = 1, dp = 1, tp = 1;
  std::vector<Variant> variants = {};
  std::int64_t grad_acc = 0;  // micro-batches per replica and step
  ProgressFlags progress = {};  // --quiet, --eval-every, --eval-batches
};

// The variants of --attention and --sharding on dp × cp = W ranks, each checked
// (check_cp_layout) against the model and the sequence.
void plan_variants(Setup& s, const Cli& cli, int world) {
  const TrainingConfig& cfg = s.in.config;
  s.tp = static_cast<int>(cli.get_int("tp"));
  if (world % s.tp != 0)
    throw UsageError("--tp " + std::to_string(s.tp) + " does not divide the " + std::to_string(world) +
                     " ranks of this run");
  s.cp = cli.given("cp") ? static_cast<int>(cli.get_int("cp")) : world / s.tp;
  if ((world / s.tp) % s.cp != 0)
    throw UsageError("--cp " + std::to_string(s.cp) + " does not divide the " + std::to_string(world) +
                     " ranks of this run" + (s.tp > 1 ? " over --tp " + std::to_string(s.tp) : std::string()) +
                     " (each of the dp = W / (cp·tp) replicas is cp·tp ranks)");
  s.dp = world / s.tp / s.cp;
  const auto attentions = parse_choice_list<CpAttention>(
      cli.get_string("attention"), "--attention", {CpAttention::ring, CpAttention::all_gather, CpAttention::all_to_all},
      attention_name);
  const auto shardings = parse_choice_list<CpSharding>(cli.get_string("sharding"), "--sharding",
                                                       {CpSharding::contiguous, CpSharding::zigzag}, sharding_name);
  for (CpAttention a : attentions)
    for (CpSharding sh : shardings) {
      const CpLayout layout{s.dp, s.cp, sh, a, s.tp};
      check_cp_layout(layout, world, cfg.model, cfg.seq);
      s.variants.push_back({layout, s.grad_acc, "trace_" + variant_name(layout)});
    }
}

// Reads and checks the flags; every rank agrees on the outcome (one message on failure).
Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s{agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda_ranks)};
  rt.agree([&] {
    plan_variants(s, cli, rt.size());
    s.grad_acc = resolve_grad_acc(cli, s.in.config.mbs, s.dp);
    for (Variant& v : s.variants) v.micro_batches = s.grad_acc;
    s.progress = progress_flags_from(cli);
    const TrainingConfig& cfg = s.in.config;
    if (s.progress.eval_every > 0) check_validation_data(*s.in.data, s.progress.eval_batches, cfg.mbs, cfg.seq);
  });
  return s;
}

void print_intro(std::ostream& out, const Setup& s, int world) {
  const TrainingConfig& cfg = s.in.config;
  const std::int64_t global = s.dp * s.grad_acc * cfg.mbs;
  out << "ch07_context_parallel: " << cfg.model.str() << " (Ψ = " << cfg.model.num_parameters()
      << " parameters), seq " << cfg.seq << ", " << dtype_name(cfg.dtype) << ", recompute "
      << recompute_name(cfg.recompute) << "\n  W = " << world << (world == 1 ? " rank" : " ranks") << ": dp = " << s.dp
      << " replica(s) of cp = " << s.cp << " rank(s), each holding " << cfg.seq / s.cp << " of every sequence's "
      << cfg.seq << " tokens\n  global batch " << global << " samples (micro-batches of " << cfg.mbs << ", "
      << s.grad_acc << " per replica and step), " << cfg.steps << " AdamW steps per variant:";
  for (const Variant& v : s.variants) out << (&v == &s.variants.front() ? " " : ", ") << v.layout.label();
  out << "\n";
  if (s.cp == 1)
    out << "  note: with cp = 1 every rank holds whole sequences: no context parallelism. Run it on several ranks:\n"
           "        mpirun -np 4 build/bin/ch07_context_parallel (or ./usp run 07)\n";
}

// The chapter's flags after the training run's (training_cli): the mesh's (--cp, --tp), the
// variants' (--attention, --sharding), the global batch.
void add_flags(Cli& cli) {
  cli.add_int("cp", 1, "context-parallel ranks per sequence (default: W / tp); dp = W / (cp·tp) replicas", 1,
              1 << 16);
  cli.add_int("tp", 1, "tensor-parallel ranks per CP rank (chapter 06's split, no SP): a dp × cp × tp mesh", 1, 1 << 16);
  cli.add_string("attention", "ring,all-gather,all-to-all",
                 "the context-parallel attentions to run side by side, comma-separated");
  cli.add_string("sharding", "contiguous,zig-zag", "the layouts of the tokens to run each attention with");
  cli.add_int("grad-acc", 1, "micro-batches per replica per optimizer step", 1, 1024);
  cli.add_int("global-batch", 0, "samples per step over all replicas; sets --grad-acc (0: mbs × grad-acc × dp)", 0,
              1 << 24);
  add_progress_flags(cli);
}

// The global batch's tokens: dp × grad-acc micro-batches of mbs × seq.
double tokens_per_step(const Setup& s) {
  return static_cast<double>(s.dp * s.grad_acc * s.in.config.tokens_per_micro_batch());
}

// 1-5. Every variant trained side by side, every rank's numbers gathered; nothing while
// exercise 07.1 or 07.2 is a stub (said once).
std::optional<VariantsReport> run_variants(Runtime& rt, const Setup& setup, const std::string& out) {
  const TrainingConfig& cfg = setup.in.config;
  // The variants' tensors over the CPU world or a device communicator, everything else over
  // metrics (common/train/training_comms.hpp); the steps through the runner (variant_runner.hpp).
  TrainingComms comms(rt, cfg);
  const double tokens = tokens_per_step(setup);
  VariantRunner runner(comms.metrics(), {cfg, static_cast<std::int64_t>(tokens), setup.progress, out});
  make_dirs(out);

  std::vector<VariantResult> results;
  // The ring merges its blocks with exercise 07.1 and every variant lays the tokens out with
  // exercise 07.2: while they are stubs, nothing can train (skipped on every rank together).
  const bool trained = train_each_variant(
      rt, setup.variants.size(), "the variants: skipped until exercises 07.1 and 07.2 are written", [&](std::size_t i) {
        results.push_back(run_variant(runner, comms.tensors(), cfg, *setup.in.data, setup.variants[i],
                                      setup.progress.held_out_batches()));
      });
  if (!trained) return std::nullopt;
  return gather_variants(comms.metrics(), std::move(results), cfg.steps, tokens, runner.agreement());
}

// 1-5 printed, cp_variants.csv and attention_blocks.csv; 6. the calculator's 8B figure
// (cp_memory.csv). Rank 0 only.
void print_report(std::ostream& out, const VariantsReport& report, const std::string& out_dir) {
  print_losses(out, report);
  print_work(out, report);
  print_memory(out, report);
  print_comm(out, report);
  print_speed(out, report);
  report.numbers.write_csv(out_dir + "/cp_variants.csv");
  report.blocks.write_csv(out_dir + "/attention_blocks.csv");
  const std::vector<calc::SweepRow> sweep = calc::run_sweep(calc::figure_cp());  // 6. the 8B figure
  calc::write_sweep_csv(out_dir + "/cp_memory.csv", sweep);
  const std::int64_t longest = sweep.back().setup.seq;
  out << "\n6. The calculator: " << sweep.front().setup.model.name << ", mixed precision, b = 1, at s = " << longest
      << " (GiB per GPU; plots/ch07_cp_memory.py draws every s)\n";
  calc::print_sweep_tables_by_recompute(out, sweep, calc::figure_cp().recomputes, longest,
                                        [](const calc::TrainingSetup& s) { return "CP " + std::to_string(s.cp); });
}

// summary.json: the top-level losses, memory and comm_bytes are the last variant's (its peaks
// are the tracker's since that variant began, its bytes those of its cp and dp·cp groups);
// "variants" holds every variant.
void write_summary(Runtime& rt, const Cli& cli, const Setup& setup, const VariantsReport& report) {
  const TrainingConfig& cfg = setup.in.config;
  JsonWriter j;
  j.begin_object().field("world", rt.size()).field("dp", setup.dp).field("cp", setup.cp);
  j.field("grad_acc", setup.grad_acc).field("global_batch", setup.dp * setup.grad_acc * cfg.mbs);
  j.field("num_parameters", cfg.model.num_parameters());
  write_variants_json(j, report, variant_name);
  j.field("comm_matches_count", report.comm_matches_count());
  const VariantResult& last = report.results.back();
  write_validation_json(j, last.val_steps, last.val_losses);
  j.end_object();
  CommStats traffic = last.cp_comm;
  traffic += last.dp_cp_comm;
  write_training_summary(rt.world(), cli.get_string("out") + "/summary.json",
                         {.chapter = "07_context_parallel", .losses = last.losses,
                          .tokens_per_second = tokens_per_step(setup) / last.median_step_seconds(), .dp = setup.dp,
                          .cp = setup.cp, .flags_json = cli.values_json(), .chapter_json = j.str(), .comm = &traffic});
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch07_context_parallel", {"usp-small", 256, 1, 3, 3e-3},
      "context parallelism: each sequence split over cp ranks, attention by a ring, an all-gather or an "
      "all-to-all, in contiguous or zig-zag chunks");
  add_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const Setup setup = read_setup(rt, cli);
  const std::string out = cli.get_string("out");
  if (rt.is_root()) print_intro(std::cout, setup, rt.size());
  const std::optional<VariantsReport> report = run_variants(rt, setup, out);
  if (!report) return 0;
  if (rt.is_root()) print_report(std::cout, *report, out);
  write_summary(rt, cli, setup, *report);
  if (rt.is_root())
    std::cout << "\nwrote " << out << "/summary.json, cp_variants.csv, attention_blocks.csv, cp_memory.csv and the "
              << "traces trace_*.{json,csv}\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
