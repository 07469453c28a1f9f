// Chapter 14's tables, each a report::Table: one list of rows gives the terminal table, the same
// fields in summary.json and, where the plots read one, the CSV (plots/ch14_*.py).
//   formats_table        section 1: range and resolution per format   formats.csv, "formats"
//   recipes_table        section 2: losses and gradients per recipe    "recipes"
//   memory_table         bytes per parameter vs usp_calc               "memory_per_parameter"
//   playbook_table       the playbook's six recipes (rows only)        "playbook_recipes"
//   fp8_table            section 3: the FP8 linears per scaling        "fp8"
//   fp8_rates_table      section 4: e4m3 vs bf16 GEMM rates (GPU)      "fp8_gemm.rates"
//   grid_table, loss_curves_table, grad_histogram_table, fp8_curves_table: the CSVs grid_1_2.csv,
//                        loss_curves.csv, grad_histogram.csv, fp8_curves.csv
// A recipe whose loss became NaN or infinite shows "diverged at step N" where its gap would be.
#pragma once
#include <vector>

#include "chapters/14_mixed_precision/format_tables.hpp"
#include "chapters/14_mixed_precision/fp8_linears.hpp"
#include "chapters/14_mixed_precision/precision_training.hpp"
#include "common/report/table.hpp"

namespace usp::ch14 {

report::Table formats_table(const std::vector<FormatRow>& rows);
// runs: fp32, bf16, fp16, fp16+scaling in that order; runs.front() is the reference.
report::Table recipes_table(const std::vector<PrecisionRun>& runs);
report::Table memory_table(const std::vector<PrecisionRun>& runs);
report::Table playbook_table();
report::Table fp8_table(const PrecisionRun& fp32, const std::vector<Fp8Run>& fp8);
report::Table fp8_rates_table();  // empty: its rows are added (and printed) as they are measured

report::Table grid_table(const std::vector<FormatRow>& rows);  // format,value: every FormatRow::grid_1_2
report::Table loss_curves_table(const std::vector<PrecisionRun>& runs);
report::Table grad_histogram_table(const std::vector<PrecisionRun>& runs);
report::Table fp8_curves_table(const PrecisionRun& fp32, const std::vector<Fp8Run>& fp8);

}  // namespace usp::ch14
