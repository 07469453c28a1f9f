// Chapter 04's report: the bucket plan (bucket_plan.csv), the losses side by side, and one row
// per variant (the terminal table, variants.csv and summary.json's "variants"), with the exact
// counts every variant must meet.
#pragma once
#include <cstdint>
#include <ostream>
#include <vector>

#include "chapters/04_data_parallel/bucket_plan.hpp"
#include "chapters/04_data_parallel/dp_comparison.hpp"
#include "common/report/table.hpp"

namespace usp::ch04 {

// One row per bucket; print() shows it with short parameter names.
report::Table bucket_plan_table(const BucketPlan& plan, const std::vector<ParamInfo>& layout);
void print_plan(std::ostream& out, const BucketPlan& plan, const report::Table& table);

// The step's losses, a column per variant (and the single-rank baseline when there is one).
void print_losses(std::ostream& out, const std::vector<DpVariant>& runs, const std::vector<double>& baseline);

// What every variant row shares: the run's shape and what a ring all-reduce of every gradient sends.
struct VariantsContext {
  int dp = 1;
  std::int64_t grad_acc = 1, global_batch = 0, seq = 0;
  double ring_bytes = 0;              // 2(N-1)/N · gradient bytes, per rank per step
  std::vector<double> baseline = {};  // the single-rank losses, or none
};
report::Table variants_table(const std::vector<DpVariant>& runs, const VariantsContext& c);

// The exact counts (all-reduces per step, ring bytes, none during non-final micro-batches): prints
// an "error: ..." line per variant that misses one, or the accumulation line. True when all hold.
bool check_counts(std::ostream& out, const std::vector<DpVariant>& runs, const VariantsContext& c);

}  // namespace usp::ch04
