// Memory sweeps: the calculator evaluated over models × sequence lengths × recomputation modes
// × precisions × parallel layouts, written as CSV for the analytic plots. Chapters 01, 02, 05,
// 06, 07 and 08 write the playbook's figures' data with
//   write_sweep_csv(out_dir + "/memory_vs_seq.csv", run_sweep(figure_memory_vs_seq()));
// and plots/ch01_memory_vs_seq.py, ch02_recompute_memory.py, ch05_zero_memory.py,
// ch06_tp_memory.py, ch07_cp_memory.py and ch08_pp_memory.py draw them.
// usp_calc --sweep NAME writes the same files without running a chapter.
//
// CSV columns (one row per configuration, bytes per rank as memory_per_rank computes them):
//   model,num_parameters,seq,mbs,recompute,precision,dp,zero,tp,sp,cp,pp,
//   parameters_bytes,gradients_bytes,optimizer_bytes,activations_bytes,total_bytes
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "common/calc/memory_model.hpp"
#include "common/calc/training_setup.hpp"

namespace usp::calc {

// The product of these lists, in this nesting order (models outermost, layouts innermost).
struct MemorySweep {
  std::vector<std::string> models;  // built-in names (ModelConfig::builtin)
  std::vector<std::int64_t> seqs;
  std::vector<Recompute> recomputes = {Recompute::none};
  std::vector<Precision> precisions = {Precision::mixed};
  std::vector<ParallelLayout> layouts = {ParallelLayout{}};
  std::int64_t mbs = 1;
  bool fp32_grad_accum = false;
};

struct SweepRow {
  TrainingSetup setup;
  MemoryBreakdown memory;
};

// Every configuration of the sweep; UsageError if one of them is invalid (unknown model,
// tp not dividing the heads, ...).
std::vector<SweepRow> run_sweep(const MemorySweep& sweep);

std::string sweep_csv_header();                    // the column line, without newline
std::string sweep_csv(const std::vector<SweepRow>& rows);  // header + one line per row
// Writes sweep_csv(rows) to path, creating its folder; usp::Error if it cannot.
void write_sweep_csv(const std::string& path, const std::vector<SweepRow>& rows);

// The playbook's analytic figures; s = 1024, 2048, 4096, 8192, 16384 (chapter 07: up to 131072),
// b = 1, mixed precision.
// ch01: 8B / 70B / 405B, no recomputation (stacked params / grads / optimizer / activations).
MemorySweep figure_memory_vs_seq();
// ch02: 1B / 3B / 8B / 70B / 405B, recompute none / selective / full.
MemorySweep figure_recompute();
// ch05: 8B at DP = 8, ZeRO stage 0 (plain DP) / 1 / 2 / 3, no recomputation.
MemorySweep figure_zero();
// ch06: 70B at TP = 1, then TP = 8 and 16 each without and with SP, no recomputation. At t = 16
// the 8 kv heads are replicated (one per rank, see memory_model.hpp); the playbook's activation
// formula does not depend on them.
MemorySweep figure_tp();
// ch07: 8B at CP = 1, 2, 4 and 8, selective and full recomputation, s = 4096 .. 131072 (the long
// sequences context parallelism is for). CP divides every activation by c (each rank holds s/c
// of the sequence); the states stay whole on every rank.
MemorySweep figure_cp();
// ch08: 8B at PP = 1, 2, 4 and 8, selective and full recomputation. The numbers are the first stage's
// (memory_model.hpp): the embedding and ceil(L/p) layers' states, and under 1F1B p micro-batches
// of those layers' activations in flight: the states fall by p, the activations do not.
MemorySweep figure_pp();

// The rows at sequence length `seq` as a table in GiB per GPU (params, grads, optim, their sum,
// activations, total), each row named by `label` (e.g. "ZeRO-2", "TP 8 + SP"): what a chapter
// prints of its figure.
void print_sweep_table(std::ostream& out, const std::vector<SweepRow>& rows, std::int64_t seq,
                       const std::string& label_header, const std::function<std::string(const TrainingSetup&)>& label);
// The same table once per recomputation mode of `modes`, each headed "  <mode> recomputation:"
// and holding the rows of that mode (chapters 07 and 08, whose figures sweep the modes).
void print_sweep_tables_by_recompute(std::ostream& out, const std::vector<SweepRow>& rows,
                                     const std::vector<Recompute>& modes, std::int64_t seq,
                                     const std::function<std::string(const TrainingSetup&)>& label);

// The figures by name, for usp_calc --sweep: "memory_vs_seq", "recompute", "zero", "tp", "cp", "pp".
std::vector<std::string> figure_names();
MemorySweep figure_by_name(const std::string& name);  // UsageError listing the names otherwise

}  // namespace usp::calc
