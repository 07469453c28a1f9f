// Chapter 07's report of the variants side by side: every rank's numbers gathered into one table
// (cp_variants.csv), the blocks each rank's attention computed (attention_blocks.csv, for the mask
// figure), the terminal's tables, and summary.json's "variants".
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "chapters/07_context_parallel/cp_run.hpp"
#include "common/json.hpp"
#include "common/train/loss_agreement.hpp"
#include "common/report/table.hpp"
#include "common/train/variants_report.hpp"

namespace usp::ch07 {

// numbers: the columns of cp_variants.csv (bytes sent and calls are per optimizer step, the
// times the median over the steps). blocks: one row per block each cp rank of the first replica
// computed in the last forward.
struct VariantsReport : VariantsTable<VariantResult> {
  report::Table blocks;

  bool comm_matches_count() const { return holds_on_every_rank("comm_matches_count"); }  // every op, every rank
};

// Collective over metrics (every rank calls it with its own results).
VariantsReport gather_variants(Communicator& metrics, std::vector<VariantResult> results, std::int64_t steps,
                               double tokens_per_step, LossAgreement losses);

// 1. the losses, their agreement and the final parameters' difference from the first variant's.
void print_losses(std::ostream& out, const VariantsReport& r);
// 2. each cp rank's attention work: blocks of the mask and compute time.
void print_work(std::ostream& out, const VariantsReport& r);
// 3. memory per rank by category, and one attention forward's peak against the K/V it holds.
void print_memory(std::ostream& out, const VariantsReport& r);
// 4. bytes sent per step by collective, against the count.
void print_comm(std::ostream& out, const VariantsReport& r);
// 5. step time, throughput, and how much of the traced variants' communication was hidden.
void print_speed(std::ostream& out, const VariantsReport& r);

}  // namespace usp::ch07
