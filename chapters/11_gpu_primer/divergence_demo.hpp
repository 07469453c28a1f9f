// The runner's control-divergence part: the same branchy work (kernels/divergence/
// branch_work.hpp) with its elements handed out divergently (odd and even lanes of every warp
// take different branches) and uniformly (each warp takes one branch), each result checked
// against the CPU, then both timed side by side. Defined only when the build has CUDA.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace usp::ch11 {

struct DivergenceRow {
  std::string arrangement;  // "divergent" or "uniform"
  std::int64_t n = 0;
  int iters = 0;
  double time_ms = 0;       // median over the timed runs
  double max_abs_err = 0;   // vs the CPU
  bool verified = false;
};

std::vector<DivergenceRow> run_divergence(std::int64_t n, int iters, int warmup, int timed, int device,
                                          std::ostream& out);

// divergence.csv: arrangement,n,iters,time_ms,max_abs_err,verified
void write_divergence_csv(const std::string& path, const std::vector<DivergenceRow>& rows);

}  // namespace usp::ch11
