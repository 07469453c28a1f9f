// Chapter 13's tables, each a report::Table: the rows print the terminal table and write the same
// fields to summary.json and the CSVs the plots read.
//   equivalence_table  section 1: each variant's largest |Δ| to the unfused one  "equivalence"
//   bandwidth_table    section 2 (and 2b on a GPU): per variant, launches, bytes, time, GB/s, share
//                      of the copy bandwidth, speed-up over the chain's unfused variant
//                      "bandwidth" / "gpu_bandwidth", fused_bandwidth.csv / fused_bandwidth_gpu.csv:
//                      chain_id,chain,variant,passes,bytes,scratch_bytes,ms,gb_per_s,copy_gb_per_s
#pragma once
#include <string>
#include <vector>

#include "chapters/13_fused_kernels/bandwidth_bench.hpp"
#include "common/report/table.hpp"

namespace usp::ch13 {

struct VariantDifference {
  std::string chain, variant;
  double largest_abs_difference = 0;
};

report::Table equivalence_table(const std::vector<VariantDifference>& rows);  // rows only, no header
report::Table bandwidth_table(const std::vector<VariantTiming>& rows, double copy_gb_per_s);

}  // namespace usp::ch13
