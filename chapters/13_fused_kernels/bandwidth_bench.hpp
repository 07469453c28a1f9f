// Time every variant of every chain and turn the counted bytes into bandwidth: GB/s = bytes /
// time, against the copy bandwidth measured in the same process (a memcpy of a buffer as large
// as the chains' tensors, y = s·x: the most a pass that reads and writes memory can hope for). On one CPU
// core the exp-heavy chains are limited by arithmetic, not memory; the table shows which.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/chains.hpp"

namespace usp::ch13 {

struct VariantTiming {
  std::string chain_id, chain, variant;
  int passes = 0;                  // kernel launches on a GPU
  std::int64_t bytes = 0;          // counted from the passes' lists
  std::int64_t scratch_bytes = 0;  // intermediates kept in memory
  double ms = 0;                   // median over the repetitions
  double gb_per_s = 0;             // bytes / ms
};

// A table row for a variant of `chain` that ran `launches` kernels in `ms`, moving the bytes that
// the chain's variant `cpu_twin` counts.
VariantTiming timing_row(const Chain& chain, const Variant& cpu_twin, int launches, double ms);

// A copy of `bytes` bytes (y = s·x), median of `reps`; counts 2 · bytes moved (read + write), as the
// chains count theirs (write-allocate traffic is not counted on either side).
double copy_bandwidth_gb_per_s(std::int64_t bytes, int reps);

// Every variant of the chains `ids` at `sizes`, each run `reps` times from its reset state (one
// untimed warm-up run first, so page faults are not timed). Chains are built one at a time.
std::vector<VariantTiming> bench_chains(const std::vector<std::string>& ids, const ChainSizes& sizes, int reps);

}  // namespace usp::ch13
