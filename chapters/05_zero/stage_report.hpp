// Chapter 05's report of the stages side by side: every rank's numbers gathered into one table
// (zero_stages.csv), the terminal's tables of rank 0's, and summary.json's "stages".
#pragma once
#include <cstdint>
#include <ostream>
#include <vector>

#include "chapters/05_zero/stage_run.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/json.hpp"
#include "common/report/table.hpp"

namespace usp::ch05 {

// The stages' measurements with every rank's numbers (gathered) and the traced runs' overlap
// (mean over the ranks). numbers: one row per stage and rank (row i·N_d + r: stage i, rank r),
// the columns of zero_stages.csv.
struct StagesReport {
  std::vector<StageResult> results;
  report::Table numbers;
  struct Overlap {
    double gather_hidden = 0, reduce_hidden = 0, step_ms = 0;
  };
  std::vector<Overlap> overlap;  // per stage
  int dp = 1;
  std::int64_t steps = 1;

  // Rank 0's value of `key` for stage i.
  std::int64_t rank0(std::size_t i, const std::string& key) const;
};

// Collective over metrics (every rank calls it with its own results).
StagesReport gather_stages(Communicator& metrics, std::vector<StageResult> results, std::int64_t steps);

// 1. losses and the final parameters' difference from the first stage's.
void print_losses(std::ostream& out, const StagesReport& s);
// 2. memory per rank: kept state (measured and by the formula) and peaks; stage 3's units held
//    and traced overlap. cfg: the model, for the unit plan.
void print_memory(std::ostream& out, const StagesReport& s, const TrainingConfig& cfg);
// 3. bytes sent per step by collective, and against data parallelism's.
void print_comm(std::ostream& out, const StagesReport& s);
// summary.json's "stages": per stage, rank 0's numbers. tokens_per_step: over all ranks.
void write_stages_json(JsonWriter& j, const StagesReport& s, double tokens_per_step);

// 4. the calculator's figure (analytic): the stages at s = 4096.
void print_calculator(std::ostream& out, const std::vector<calc::SweepRow>& sweep);

}  // namespace usp::ch05
