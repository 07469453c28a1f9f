// Chapter 06's report of the layouts side by side: every rank's numbers gathered into one table
// (tp_variants.csv), the terminal's tables of rank 0's, and summary.json's "variants".
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "chapters/06_tensor_parallel/tp_run.hpp"
#include "common/json.hpp"
#include "common/train/loss_agreement.hpp"
#include "common/report/table.hpp"
#include "common/train/variants_report.hpp"

namespace usp::ch06 {

// numbers: the columns of tp_variants.csv (bytes sent and calls are per optimizer step, the
// step time the median).
struct VariantsReport : VariantsTable<VariantResult> {
  // Whether every rank's `key` equals its `other` in every variant.
  bool all_equal(const std::string& key, const std::string& other) const;
};

// Collective over metrics (every rank calls it with its own results).
VariantsReport gather_variants(Communicator& metrics, std::vector<VariantResult> results, std::int64_t steps,
                               double tokens_per_step, LossAgreement losses);

// 1. the losses, their agreement and the final parameters' difference from the first variant's.
void print_losses(std::ostream& out, const VariantsReport& r);
// 2. memory per rank by category, and one layer's saved activations against the formula.
void print_memory(std::ostream& out, const VariantsReport& r);
// 3. bytes sent per step by collective and group, against the operator count.
void print_comm(std::ostream& out, const VariantsReport& r);
// 4. step time and throughput.
void print_speed(std::ostream& out, const VariantsReport& r);

}  // namespace usp::ch06
