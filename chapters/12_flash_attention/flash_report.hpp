// Chapter 12's tables, each a report::Table: the rows print the terminal table and write the same
// fields to summary.json and the CSVs the plots read.
//   equivalence_table  section 1: largest |flash - naive| per output     "equivalence"
//   attention_table    section 2: time and memory against s             attention_vs_seq.csv
//   training_table     section 3: each attention's losses and peak activations (terminal only)
//   gpu_ladder_table   section 4: each CUDA rung's error and rate       "gpu_ladder", gpu_ladder.csv
#pragma once
#include <vector>

#include "chapters/12_flash_attention/attention_bench.hpp"
#include "chapters/12_flash_attention/equivalence.hpp"
#include "chapters/12_flash_attention/flash_training.hpp"
#include "chapters/12_flash_attention/gpu_ladder.hpp"
#include "common/report/table.hpp"

namespace usp::ch12 {

report::Table equivalence_table(const std::vector<Equivalence>& cases);
// attention_vs_seq.csv: seq,variant,forward_ms,backward_ms,memory_bytes,max_abs_error
report::Table attention_table(const std::vector<AttentionPoint>& points);
report::Table training_table(const TrainingRun& naive, const TrainingRun& flash);
// gpu_ladder.csv: rung,batch,seq,heads,kv_heads,head_dim,ms,tflops,error (runs timed at `shape`)
report::Table gpu_ladder_table(const LadderShape& shape, const std::vector<RungRun>& runs);

}  // namespace usp::ch12
