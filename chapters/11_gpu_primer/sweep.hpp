// The runner's matmul part: every rung of the ladder (ladder.hpp) on square problems of each
// size, checked on every element against the CPU reference, then timed (event_timer.hpp) and
// compared with cuBLAS of the same precision, measured in the same run.
// Defined only when the build has CUDA.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace usp::ch11 {

struct SweepConfig {
  std::vector<int> sizes;            // M = N = K = size
  std::vector<std::string> kernels;  // rung names; the two cuBLAS baselines always run
  int warmup = 3, iters = 20;
  float alpha = 1.0f, beta = 0.5f;
  std::uint64_t seed = 0;
  int device = 0;
};

struct SweepRow {
  std::string kernel, precision;     // "01_naive", "f32"
  int M = 0, N = 0, K = 0;
  double time_ms = 0;                // median over the timed runs
  double gflops = 0;                 // 2·M·N·K / time
  double pct_of_cublas = 0;          // 100 · gflops / gflops of the cuBLAS baseline of the same precision
  double max_abs_err = 0;            // vs the CPU reference
  double worst_ratio = 0;            // max |err| / tolerance (<= 1 passes)
  bool verified = false;
  std::string check;                 // the check's message
};

std::vector<SweepRow> run_sweep(const SweepConfig& config, std::ostream& out);

// kernels.csv: kernel,M,N,K,time_ms,gflops,pct_of_cublas,max_abs_err,precision,worst_err_over_tol,verified
void write_kernels_csv(const std::string& path, const std::vector<SweepRow>& rows);

}  // namespace usp::ch11
