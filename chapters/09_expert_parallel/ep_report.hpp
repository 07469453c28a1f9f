// What chapter 09 prints and writes about its variants (ep_run.hpp): the losses side by side,
// the tokens per expert (first and last step, and the imbalance max/mean over training), the
// drops, each rank's all-to-all bytes, parameters held and peak memory, and the step times; the
// CSVs plots/ch09_tokens_per_expert.py and plots/ch09_a2a_bytes.py draw.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "chapters/09_expert_parallel/ep_run.hpp"
#include "common/json.hpp"
#include "common/report/table.hpp"

namespace usp::ch09 {

void print_losses(std::ostream& out, const std::vector<EpResult>& results);
void print_routing(std::ostream& out, const std::vector<EpResult>& results, const ModelConfig& model);
void print_ranks(std::ostream& out, const std::vector<EpResult>& results, const TrainingConfig& cfg);

// tokens_per_expert.csv: variant,ep,aux,step,layer,expert,routed,kept
report::Table tokens_table(const std::vector<EpResult>& results, const ModelConfig& model);
// ep_ranks.csv: variant,ep,aux,rank,a2a_bytes_per_step,params_held,peak_total_bytes
report::Table ranks_table(const std::vector<EpResult>& results);
void write_variants_json(JsonWriter& j, const std::vector<EpResult>& results, const ModelConfig& model);

}  // namespace usp::ch09
