// What the chapters that train variants side by side (06 and 07; variant_runner.hpp) report
// alike: the table of every rank's numbers, each variant's label padded on the terminal, their
// first table (the losses), and the variants in summary.json.
//
//                          loss 0       loss 1       max|Δw| vs DP 4 × TP 1
//     DP 4 × TP 1          5.5451234    5.4012345    0
//     DP 2 × TP 2          5.5451234    5.4012345    2.38e-07
//     the losses agree across the layouts: yes (largest relative difference 1.2e-07; allowed 0.0001)
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "common/numeric_compare.hpp"
#include "common/report/table.hpp"
#include "common/train/loss_agreement.hpp"

namespace usp {

// A text column padded to `width` characters on the terminal: printf pads bytes, and a label's
// "×" or "·" is two (UTF-8).
report::Column padded_label_column(int width);

// One variant of the table: its label, its loss at every step, its final parameters (flat), and
// the name of its files (trace_<name>.json) for summary.json.
struct VariantLosses {
  std::string label;
  const std::vector<double>& losses;
  const std::vector<float>& parameters;
  std::string name = "";
};

// The VariantLosses of a chapter's results (each with .variant.layout, .losses, .parameters), in
// their order; name(layout) the variant's file name.
template <class Result, class Name>
std::vector<VariantLosses> variant_losses(const std::vector<Result>& results, Name name) {
  std::vector<VariantLosses> out;
  for (const Result& r : results)
    out.push_back({r.variant.layout.label(), r.losses, r.parameters, name(r.variant.layout)});
  return out;
}

// The table (label, "loss k" for every step of the first variant, "max|Δw| vs <reference>": each
// variant's parameters against the first's, numeric_compare.hpp's max_abs_diff), then "  the losses agree across the <what>: yes|NO
// (largest relative difference ...; allowed ...)" from `agreement`.
void print_losses_side_by_side(std::ostream& out, const std::vector<VariantLosses>& variants,
                               const report::Column& label, const std::string& reference,
                               const LossAgreement& agreement, const std::string& what);

// A chapter's variants and the numbers every rank measured of each, gathered (row i·W + r of
// `numbers`: variant i on world rank r; the chapters' gather_variants build it).
template <class Result>
struct VariantsTable {
  std::vector<Result> results;
  report::Table numbers;
  int world = 1;
  std::int64_t steps = 1;
  double tokens_per_step = 0;  // the global batch's tokens
  LossAgreement losses;        // every variant's losses against the first's (VariantRunner::agreement)

  const report::Value& at(std::size_t variant, int rank, const std::string& key) const {
    return numbers.at(variant * static_cast<std::size_t>(world) + static_cast<std::size_t>(rank), key);
  }
  // Variant i's label, then rank 0's values of `keys`: a row of a terminal table of rank 0's numbers.
  std::vector<report::Value> rank0_row(std::size_t variant, const std::vector<std::string>& keys) const {
    std::vector<report::Value> row = {results[variant].variant.layout.label()};
    for (const std::string& k : keys) row.push_back(at(variant, 0, k));
    return row;
  }
  // Whether the integer column `key` is 1 on every row (a check each rank made of its own numbers).
  bool holds_on_every_rank(const std::string& key) const {
    for (std::size_t row = 0; row < numbers.rows(); ++row)
      if (std::get<std::int64_t>(numbers.at(row, key)) != 1) return false;
    return true;
  }
};

// summary.json's "losses_agree" and "max_relative_loss_difference", from `agreement`.
void write_agreement_json(JsonWriter& j, const LossAgreement& agreement);

// summary.json's "variants": per variant {label, name, losses, max_param_diff_vs_first, rank0: the
// fields of row v · world of `numbers`, whose rows are every variant's `world` ranks in turn}.
void write_variants_array(JsonWriter& j, const std::vector<VariantLosses>& variants, const report::Table& numbers,
                          int world);

// Both of the above for a chapter's table; name(layout): a variant's file name.
template <class Result, class Name>
void write_variants_json(JsonWriter& j, const VariantsTable<Result>& table, Name name) {
  write_agreement_json(j, table.losses);
  write_variants_array(j, variant_losses(table.results, name), table.numbers, table.world);
}

}  // namespace usp
