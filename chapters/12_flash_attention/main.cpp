// ch12_flash_attention: the playbook's "Flash Attention 1-3", on the CPU and, with one, a GPU.
//
//   1. Equivalence: flash attention (tiles of 16 × 8 on T = 37, head dim 20, GQA) against the naive
//      attention, causal and not, fp32 and bf16 inputs: outputs, log-sum-exp and gradients.
//   2. Time and memory against the sequence length (--seqs): naive keeps S and P, [B, H, T, T];
//      flash keeps tiles and the log-sum-exp. The memory column is the tracker's peak above the
//      inputs and outputs: quadratic for naive, flat for flash.
//   3. The model trained with each attention for --steps steps: the same losses, and the peak
//      activation memory of each; on --device (auto: a GPU when one is visible, where flash is the
//      ladder's FA2 kernels).
//   4. With a GPU: the CUDA ladder (kernels/attention: 01 naive, 02 FA1-style forward, 03 FA2-style
//      forward, 04 its backward, 05 and 06 the FA2 forward and backward on tensor cores, bf16), each
//      rung's error against the CPU at a small shape and its TFLOP/s at B 1, T --gpu-seq, H 16,
//      D 128 (bench/attention_sdpa.py adds PyTorch's SDPA beside it).
// Writes <out>/summary.json, attention_vs_seq.csv (plots/ch12_attention_vs_seq.py) and, with a
// GPU, gpu_ladder.csv.
//
//   build/bin/ch12_flash_attention [--seqs 256,512,1024,2048] [--q-rows 64] [--k-cols 64]
//   ./usp run 12
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/12_flash_attention/flash_report.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/loss_agreement.hpp"

namespace {

using namespace usp;
using namespace usp::ch12;

// 2. Time and memory against s; attention_vs_seq.csv.
void show_attention_vs_seq(const std::vector<std::int64_t>& seqs, std::int64_t heads, FlashTiles tiles,
                           const std::string& out) {
  BenchShape shape;
  shape.heads = shape.kv_heads = heads;
  const report::Table t = attention_table(bench_attention(seqs, shape, tiles));
  std::printf("\n2. Causal attention, B 1, H %lld, D 64, forward + backward, tiles %lld × %lld (one CPU core):\n",
              static_cast<long long>(shape.heads), static_cast<long long>(tiles.q_rows),
              static_cast<long long>(tiles.k_cols));
  t.print(std::cout);
  t.write_csv(out + "/attention_vs_seq.csv");
}

// 3. The model trained with each attention (a progress line per step unless --quiet): the same
// losses, each one's peak activations.
std::vector<double> show_training(const TrainingConfig& cfg, const Dataset& data, FlashTiles tiles,
                                  const StepLines& lines, JsonWriter& j) {
  std::printf("\n3. %s trained %lld steps on %lld × %lld tokens with each attention, on %s:\n", cfg.model.str().c_str(),
              static_cast<long long>(cfg.steps), static_cast<long long>(cfg.mbs), static_cast<long long>(cfg.seq),
              cfg.device.str().c_str());
  const TrainingRun naive = train_with(cfg, data, false, tiles, lines), flash = train_with(cfg, data, true, tiles, lines);
  const double gap = max_loss_gap(flash.losses, naive.losses, true);
  training_table(naive, flash).print(std::cout);
  std::printf("   largest relative loss gap %.1e (fp32 sums in another order)\n", gap);
  j.field("training_max_relative_loss_gap", gap);
  j.field("naive_peak_activation_bytes", naive.peak_activation_bytes);
  j.field("flash_peak_activation_bytes", flash.peak_activation_bytes);
  return flash.losses;
}

// 4. The CUDA ladder, where a GPU is visible: each rung checked at a small shape, timed at B 1,
// T gpu_seq, H 16, D 128; gpu_ladder.csv.
void show_gpu_ladder(int gpu_seq, const std::string& out, JsonWriter& j) {
  if (!gpu_ladder_available()) {
    std::printf("\n4. No GPU visible: the CUDA ladder (kernels/attention) is not measured.\n");
    return;
  }
  const LadderShape small{2, 300, 4, 2, 64}, big{1, gpu_seq, 16, 16, 128};
  const std::vector<RungRun> checked = run_gpu_ladder(small, 0, true);
  std::vector<RungRun> rows = run_gpu_ladder(big, 10, false);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].error = checked[i].error;
  std::printf("\n4. The CUDA ladder, causal, fp32 (rungs 05, 06: bf16 inputs, checked against the fp32 attention of\n"
              "   the same bf16 values): error against the CPU at B 2, T 300, H 4 on G 2, D 64 (largest |Δ| over the\n"
              "   largest value), TFLOP/s at B 1, T %d, H 16, D 128 (causal count: 2·B·H·T²·D forward, 2.5× that\n"
              "   backward)\n",
              big.seq);
  const report::Table t = gpu_ladder_table(big, rows);
  t.print_and_write_json(std::cout, "gpu_ladder", j);
  t.write_csv(out + "/gpu_ladder.csv");
  std::printf("   PyTorch's SDPA on the same problem: python3 bench/attention_sdpa.py --ladder %s/gpu_ladder.csv\n",
              out.c_str());
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch12_flash_attention", {"usp-tiny", 256, 2, 5, 3e-3},
      "flash attention on the CPU: tiled, online softmax, recomputation in the backward; against the naive "
      "attention in equivalence, time and memory, and in training; with a GPU, the CUDA ladder checked and timed");
  cli.add_string("seqs", "256,512,1024,2048", "sequence lengths of the time and memory table");
  cli.add_int("q-rows", 64, "queries per tile (B_r)", 1, 4096);
  cli.add_int("k-cols", 64, "keys per tile (B_c)", 1, 4096);
  cli.add_int("bench-heads", 8, "heads of the table's attention (head dim 64)", 1, 128);
  cli.add_int("gpu-seq", 4096, "sequence length of the GPU ladder's timing (B 1, H 16, D 128)", 16, 16384);
  add_step_lines_flag(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  rt.require(rt.size() == 1, "chapter 12 runs on one device: launch it without mpirun (or with -np 1)");
  rt.require(!cli.given("gpu-seq") || gpu_ladder_available(),
             "--gpu-seq sets the sequence length of the CUDA ladder's timing (part 4), which runs only where a GPU "
             "is visible to a CUDA build: here nothing would use it");
  const TrainingInputs in = agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda);
  std::vector<std::int64_t> seqs;
  rt.agree([&] { seqs = parse_size_list(cli.get_string("seqs"), "--seqs", 1, 1 << 16); });
  const FlashTiles tiles{cli.get_int("q-rows"), cli.get_int("k-cols")};
  OpenSummary record(cli, "12_flash_attention");  // --out made, the results object open
  const std::string& out = record.out;
  JsonWriter& j = record.results;

  // 1. Equivalence (exercises 12.1 and 12.2).
  std::vector<Equivalence> eq;
  const std::string missing = rt.skip_if_not_implemented([&] { eq = check_equivalence(); });
  if (!missing.empty()) {
    std::cout << "flash attention needs exercises 12.1 and 12.2 (" << missing << "); the chapter stops here.\n";
    record.write(rt.world());
    return 0;
  }
  std::printf("1. Flash attention (tiles 16 × 8) against the naive attention on B 2, T 37, H 4 on G 2 kv heads, D 20:\n"
              "   largest |flash - naive| of each output\n");
  equivalence_table(eq).print_and_write_json(std::cout, "equivalence", j);
  show_attention_vs_seq(seqs, cli.get_int("bench-heads"), tiles, out);
  record.summary.losses = show_training(in.config, *in.data, tiles, step_lines_from(cli, in.config.device), j);
  show_gpu_ladder(static_cast<int>(cli.get_int("gpu-seq")), out, j);
  record.write(rt.world());
  std::printf("\nwrote %s/summary.json, attention_vs_seq.csv\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
