// ch11_gpu_primer: the playbook's "Diving in the GPUs" as a matmul ladder. Two parts:
//   matmul      every rung of the ladder (ladder.hpp: 01_naive .. 08_tensor_core_bf16) and
//               cuBLAS on square problems of each --sizes, each output element checked against
//               the CPU reference, then timed with CUDA events (median of --iters runs after
//               --warmup); GFLOP/s and % of cuBLAS of the same precision, measured in this run
//   divergence  the same branchy work arranged so that warps diverge, or not, timed side by side
// Writes <out>/summary.json, <out>/kernels.csv (the input of plots/ch11_kernels.py) and
// <out>/divergence.csv. Needs a CUDA GPU; without one (or without CUDA in the build) it says
// so and exits non-zero. --help and --list work everywhere.
//
//   build/bin/ch11_gpu_primer [--part matmul|divergence|all] [--sizes 128,1000,4096] [--kernels 01_naive,...]
//   ./usp run 11
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "common/cuda_support.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "kernels/matmul/reference.hpp"
#include "chapters/11_gpu_primer/ladder.hpp"

#if defined(USP_HAVE_CUDA)
#include "chapters/11_gpu_primer/divergence_demo.hpp"
#include "chapters/11_gpu_primer/sweep.hpp"
#endif

namespace {

using namespace usp;
using namespace usp::ch11;

const char* const kDefaultSizes = "128,256,512,1000,1023,1024,2048,2049,4096";
constexpr int kMaxSize = 16384;  // M = N = K at most: three fp32 matrices of 1 GiB each

std::vector<std::string> parse_kernels(const std::string& text) {
  std::vector<std::string> names;
  if (text == "all") {
    for (const Rung& r : ladder()) names.push_back(r.name);
    return names;
  }
  for (const std::string& name : split_list(text)) names.push_back(find_rung(name).name);  // throws on a typo, or ''
  return names;
}

void print_ladder(std::ostream& out) {
  out << "The matmul ladder (C = alpha·A·B + beta·C, row-major; each rung adds one idea):\n";
  for (const Rung& r : ladder())
    out << "  " << r.name << std::string(22 - std::min<std::size_t>(21, r.name.size()), ' ') << "["
        << precision_name(r.precision) << "] " << r.idea << "\n"
        << std::string(24, ' ') << r.file << "\n";
}

void add_flags(Cli& cli) {
  cli.add_common("out/11_gpu_primer");
  cli.add_choice("part", "all", {"matmul", "divergence", "all"}, "what to run");
  cli.add_string("sizes", kDefaultSizes, "matrix sizes M = N = K, comma-separated");
  cli.add_string("kernels", "all", "rungs to run, comma-separated (cuBLAS always runs), or all");
  cli.add_int("iters", 20, "timed runs per kernel and size (the median is reported)", 1, 100000);
  cli.add_int("warmup", 3, "untimed runs before timing", 0, 100000);
  cli.add_float("alpha", 1.0, "C = alpha·A·B + beta·C");
  cli.add_float("beta", 0.5, "C = alpha·A·B + beta·C");
  cli.add_int("divergence-n", 1 << 22, "elements of the divergence demonstration", 1, std::int64_t{1} << 30);
  cli.add_int("divergence-iters", 256, "steps of branch work per element", 0, 1 << 20);
  cli.add_flag("list", "print the ladder (rungs, files, ideas) and exit");
}

#if defined(USP_HAVE_CUDA)
SweepConfig matmul_config(const Cli& cli, std::vector<int> sizes, std::vector<std::string> kernels, int device) {
  SweepConfig config;
  config.sizes = std::move(sizes);
  config.kernels = std::move(kernels);
  config.warmup = static_cast<int>(cli.get_int("warmup"));
  config.iters = static_cast<int>(cli.get_int("iters"));
  config.alpha = static_cast<float>(cli.get_float("alpha"));
  config.beta = static_cast<float>(cli.get_float("beta"));
  config.seed = static_cast<std::uint64_t>(cli.get_int("seed"));
  config.device = device;
  return config;
}

// summary.json: every kernel's and arrangement's numbers and whether all were verified; returns that.
bool write_summary(const std::string& path, const Cli& cli, const std::vector<SweepRow>& rows,
                   const std::vector<DivergenceRow>& divergence) {
  bool all_verified = true;
  JsonWriter w;
  w.begin_object();
  w.field("chapter", "11_gpu_primer").field("device", cuda::device_name()).key("flags").raw(cli.values_json());
  w.key("kernels").begin_array();
  for (const SweepRow& r : rows) {
    all_verified = all_verified && r.verified;
    w.begin_object().field("kernel", r.kernel).field("precision", r.precision).field("M", r.M).field("N", r.N);
    w.field("K", r.K).field("time_ms", r.time_ms).field("gflops", r.gflops).field("pct_of_cublas", r.pct_of_cublas);
    w.field("max_abs_err", r.max_abs_err).field("worst_err_over_tol", r.worst_ratio).field("verified", r.verified);
    w.end_object();
  }
  w.end_array();
  w.key("divergence").begin_array();
  for (const DivergenceRow& d : divergence) {
    all_verified = all_verified && d.verified;
    w.begin_object().field("arrangement", d.arrangement).field("n", d.n).field("iters", d.iters);
    w.field("time_ms", d.time_ms).field("max_abs_err", d.max_abs_err).field("verified", d.verified).end_object();
  }
  w.end_array();
  w.field("all_verified", all_verified);
  w.end_object();
  w.write_file(path);
  return all_verified;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](Runtime& rt) {
    Cli cli("ch11_gpu_primer",
            "Diving in the GPUs: a ladder of fp32 matmul kernels (naive -> coalesced -> shared-memory\n"
            "tiling -> 1-D and 2-D register blocking -> 16-byte loads -> warp tiling) and a bf16\n"
            "tensor-core kernel, each checked element by element and timed against cuBLAS; and a\n"
            "control-divergence demonstration. Needs a CUDA GPU; --list shows the ladder anywhere.");
    add_flags(cli);
    if (!rt.parse(cli, argc, argv)) return 0;

    if (cli.get_flag("list")) {
      for (const char* flag : {"part", "sizes", "kernels", "iters", "warmup", "alpha", "beta", "divergence-n",
                               "divergence-iters", "seed", "device", "backend", "out"})
        rt.require(!cli.given(flag), std::string("--") + flag + " does not go with --list: it prints the ladder and "
                                     "exits, running nothing");
      if (rt.is_root()) print_ladder(std::cout);
      return 0;
    }
    // Flags are checked before the hardware, so a typo is reported the same way everywhere.
    std::vector<int> sizes;
    std::vector<std::string> kernels;
    rt.agree([&] {
      sizes = parse_int_list(cli.get_string("sizes"), "--sizes", 1, kMaxSize);
      kernels = parse_kernels(cli.get_string("kernels"));
    });
#if !defined(USP_HAVE_CUDA)
    rt.require(false,
               "ch11_gpu_primer was built without CUDA (USP_CUDA=OFF, or no nvcc when it was configured), so it has "
               "no kernels to run: install the CUDA toolkit and rebuild (./usp build). The chapter's CPU-side checks "
               "are its tests: ./usp test 11");
    return 1;
#else
    rt.require(cuda_device_count() > 0,
               "ch11_gpu_primer needs a CUDA GPU: no CUDA device is visible (no GPU, no driver, or "
               "CUDA_VISIBLE_DEVICES hides them). The chapter's CPU-side checks are its tests: ./usp test 11");
    rt.require(rt.size() == 1, "chapter 11 times kernels on one GPU: run it on one rank (./usp run 11)");
    Device dev;
    rt.agree([&] { dev = parse_device(cli.get_string("device"), rt.local_rank()); });
    rt.require(dev.is_cuda(), "chapter 11 measures GPU kernels: use --device cuda[:N] or auto, not cpu");
    cuda::set_device(dev.index);

    const std::string part = cli.get_string("part"), out_dir = cli.get_string("out");
    const bool all = part == "all";
    std::ostream& out = std::cout;
    out << "device: " << cuda::device_name() << " (cuda:" << dev.index << "); CPU reference: "
        << (matmul::matmul_cpu_uses_blas() ? "OpenBLAS sgemm" : "triple loop (no BLAS in this build: slow for large sizes)")
        << "\n\n";

    std::vector<SweepRow> rows;
    std::vector<DivergenceRow> divergence;
    if (all || part == "matmul") rows = run_sweep(matmul_config(cli, sizes, kernels, dev.index), out);
    if (all || part == "divergence")
      divergence = run_divergence(cli.get_int("divergence-n"), static_cast<int>(cli.get_int("divergence-iters")),
                                  static_cast<int>(cli.get_int("warmup")), static_cast<int>(cli.get_int("iters")),
                                  dev.index, out);

    make_dirs(out_dir);
    const bool all_verified = write_summary(out_dir + "/summary.json", cli, rows, divergence);
    if (!rows.empty()) write_kernels_csv(out_dir + "/kernels.csv", rows);
    if (!divergence.empty()) write_divergence_csv(out_dir + "/divergence.csv", divergence);
    out << "wrote " << out_dir << "/summary.json" << (rows.empty() ? "" : ", kernels.csv")
        << (divergence.empty() ? "" : ", divergence.csv") << "\n";
    if (!all_verified) {
      std::cerr << "error: some kernel's output is wrong (WRONG above); its timing means nothing\n";
      return 1;
    }
    return 0;
#endif
  });
}
