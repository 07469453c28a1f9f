// ch13_fused_kernels: the playbook's "Fused kernels", on the CPU and, where one is visible, a GPU.
//
//   1. Equivalence: every chain's fused variant (and the core's ops where they exist) against
//      its unfused variant on odd shapes: the largest difference of each output.
//   2. The bandwidth table: for each chain and variant, the kernels it launches, the bytes it
//      moves (counted from its passes), the intermediates it keeps, the time, GB/s and the
//      fraction of the copy bandwidth measured in the same process.
//   2b. With a GPU: the same table for the CUDA kernels (kernels/fused), against the device's
//      copy bandwidth, and the launch overhead of an empty kernel.
//   3. The model trained with exercise 13.1's fused residual + RMSNorm: the same losses.
// Writes <out>/summary.json, fused_bandwidth.csv and, with a GPU, fused_bandwidth_gpu.csv
// (plots/ch13_bandwidth.py).
//
//   build/bin/ch13_fused_kernels [--bench-rows 2048] [--bench-width 2048] [--bench-ffn 5632]
//                            [--bench-vocab 32768] [--bench-params 16777216]
//   ./usp run 13
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/bandwidth_bench.hpp"
#include "chapters/13_fused_kernels/chains.hpp"
#include "chapters/13_fused_kernels/fused_model_norm.hpp"
#include "chapters/13_fused_kernels/fused_report.hpp"
#include "chapters/13_fused_kernels/gpu_chains.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/numeric_compare.hpp"
#include "common/report/machine_load.hpp"
#include "common/runtime.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/loss_agreement.hpp"

namespace {

using namespace usp;
using namespace usp::ch13;

// 1. Every variant against the unfused one, on shapes that are no multiple of any vector width.
std::vector<VariantDifference> equivalence() {
  const ChainSizes odd{37, 45, 53, 101, 1001};
  std::vector<VariantDifference> rows;
  for (const std::string& id : chain_ids()) {
    const Chain chain = make_chain(id, odd);
    const auto reference = run_outputs(chain, chain.variant("unfused"));
    for (const Variant& v : chain.variants) {
      if (v.name == "unfused") continue;
      const auto outputs = run_outputs(chain, v);  // the largest gap over the chain's outputs
      double gap = 0;
      for (std::size_t t = 0; t < outputs.size(); ++t) gap = std::max(gap, max_abs_diff(outputs[t], reference[t]));
      rows.push_back({chain.name, v.name, gap});
    }
  }
  return rows;
}

// 2. The CPU's bandwidth table (fused_bandwidth.csv), and 2b the same chains on the GPU where
// there is one (the CUDA kernels of kernels/fused, fused_bandwidth_gpu.csv).
void show_bandwidth(const ChainSizes& sizes, int reps, const std::string& out, JsonWriter& j) {
  const std::vector<VariantTiming> rows = bench_chains(chain_ids(), sizes, reps);
  std::int64_t largest = 0;
  for (const VariantTiming& t : rows) largest = std::max(largest, t.bytes);
  const double copy = copy_bandwidth_gb_per_s(std::min<std::int64_t>(largest, std::int64_t{256} << 20), reps);
  std::printf("\n2. N %lld, C %lld, F %lld, V %lld, P %lld, fp32, one CPU core; copy bandwidth (y = s·x) %.1f GB/s\n",
              static_cast<long long>(sizes.rows), static_cast<long long>(sizes.hidden),
              static_cast<long long>(sizes.ffn), static_cast<long long>(sizes.vocab),
              static_cast<long long>(sizes.params), copy);
  const report::Table cpu = bandwidth_table(rows, copy);
  cpu.print_and_write_json(std::cout, "bandwidth", j);
  // The bytes are exact; the times (and so GB/s and the share of the copy) are the machine's now.
  const report::MachineLoad load = report::machine_load();
  std::printf("   timed at %s\n", report::describe(load).c_str());
  j.field("load_average", load.load1).field("cores", load.cores);
  cpu.write_csv(out + "/fused_bandwidth.csv");
  if (!gpu_chains_available()) {
    std::printf("\n2b. No GPU visible: the CUDA kernels' table (kernels/fused) is not measured.\n");
    return;
  }
  const std::vector<VariantTiming> gpu_rows = bench_chains_gpu(chain_ids(), sizes, reps);
  const double gpu_copy = gpu_copy_bandwidth_gb_per_s(std::min<std::int64_t>(largest, std::int64_t{1} << 30), reps);
  const double launch_us = gpu_launch_overhead_us(1000);
  std::printf("\n2b. The same sizes on the GPU (%s): device-to-device copy %.1f GB/s, an empty kernel's launch %.2f us\n",
              gpu_device_name().c_str(), gpu_copy, launch_us);
  j.field("gpu_copy_gb_per_s", gpu_copy).field("gpu_launch_overhead_us", launch_us);
  const report::Table gpu = bandwidth_table(gpu_rows, gpu_copy);
  gpu.print_and_write_json(std::cout, "gpu_bandwidth", j);
  gpu.write_csv(out + "/fused_bandwidth_gpu.csv");
}

// 3. The model trained with the core's add + norm and with the fused kernel (a progress line per
// step unless --quiet).
std::vector<double> show_training(const TrainingConfig& cfg, const Dataset& data, const StepLines& lines, JsonWriter& j) {
  std::printf("\n3. %s trained %lld steps on %lld × %lld tokens, with the core's add + norm and with the fused kernel:\n",
              cfg.model.str().c_str(), static_cast<long long>(cfg.steps), static_cast<long long>(cfg.mbs),
              static_cast<long long>(cfg.seq));
  const std::vector<double> plain = train_losses(cfg, data, false, lines), fused = train_losses(cfg, data, true, lines);
  const double gap = max_loss_gap(fused, plain, true);
  for (const auto& [name, losses] : {std::pair{"core", &plain}, std::pair{"fused", &fused}}) {
    std::string text;
    for (double x : *losses) text += std::to_string(x).substr(0, 8) + " ";
    std::printf("   %-6s %s\n", name, text.c_str());
  }
  std::printf("   largest relative loss gap %.1e\n", gap);
  j.field("training_max_relative_loss_gap", gap);
  return fused;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch13_fused_kernels", {"usp-tiny", 128, 4, 5, 3e-3},
      "unfused vs fused kernels on the CPU: residual + RMSNorm, SwiGLU, softmax + cross-entropy, AdamW; bytes "
      "moved, GB/s against the copy bandwidth (and the CUDA kernels' table where a GPU is visible), and the model "
      "trained with the fused norm");
  cli.add_int("bench-rows", 2048, "N: tokens of the table's activations", 1, 1 << 20);
  cli.add_int("bench-width", 2048, "C: width of the norm chains (hidden size)", 1, 1 << 16);
  cli.add_int("bench-ffn", 5632, "F: MLP width of the SwiGLU chains", 1, 1 << 18);
  cli.add_int("bench-vocab", 32768, "V: vocabulary of the cross-entropy chain", 2, 1 << 20);
  cli.add_int("bench-params", 16 << 20, "P: parameters of the AdamW chain", 1, std::int64_t{1} << 32);
  cli.add_int("reps", 5, "timed repetitions per variant (the median is reported)", 1, 1000);
  add_step_lines_flag(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  rt.require(rt.size() == 1, "chapter 13 runs on one device: launch it without mpirun (or with -np 1)");
  const TrainingInputs in = agree_training_inputs(rt, cli);
  if (in.config.dtype != DType::f32)
    throw UsageError("chapter 13's fused residual + RMSNorm (exercise 13.1) is an fp32 kernel: use --precision fp32");
  ChainSizes sizes;
  sizes.rows = cli.get_int("bench-rows");
  sizes.hidden = cli.get_int("bench-width");
  sizes.ffn = cli.get_int("bench-ffn");
  sizes.vocab = cli.get_int("bench-vocab");
  sizes.params = cli.get_int("bench-params");
  const int reps = static_cast<int>(cli.get_int("reps"));
  OpenSummary record(cli, "13_fused_kernels");  // --out made, the results object open
  const std::string& out = record.out;
  JsonWriter& j = record.results;

  // 1. Equivalence (the fused residual + RMSNorm is exercise 13.1).
  std::vector<VariantDifference> eq;
  const std::string missing = rt.skip_if_not_implemented([&] { eq = equivalence(); });
  if (!missing.empty()) {
    std::cout << "the fused residual + RMSNorm needs exercise 13.1 (" << missing << "); the chapter stops here.\n";
    record.write(rt.world());
    return 0;
  }
  std::printf("1. Every variant against the unfused one (N 37, C 45, F 53, V 101, P 1001): largest |Δ| of the outputs\n");
  const report::Table differences = equivalence_table(eq);
  for (std::size_t r = 0; r < differences.rows(); ++r) differences.print_row(std::cout, r);
  j.key("equivalence");
  differences.write_json(j);
  show_bandwidth(sizes, reps, out, j);
  record.summary.losses = show_training(in.config, *in.data, step_lines_from(cli, in.config.device), j);
  record.write(rt.world());
  std::printf("\nwrote %s/summary.json, fused_bandwidth.csv\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
