#include "chapters/14_mixed_precision/precision_report.hpp"

#include <cstdio>
#include <numeric>

#include "common/calc/precision_recipes.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/loss_agreement.hpp"

namespace usp::ch14 {

namespace {

using report::Column;
using report::Table;
using report::Value;

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double per(std::int64_t bytes, double n) { return static_cast<double>(bytes) / n; }

// The "max |Δ| vs fp32" cell: the largest gap to the fp32 run, or "diverged at step N" where the
// recipe's loss became NaN or infinite: a result of this chapter, never counted as agreeing.
std::string gap_cell(const std::vector<double>& losses, const std::vector<double>& fp32) {
  const std::int64_t diverged = first_non_finite(losses);
  if (diverged >= 0) return "diverged at step " + std::to_string(diverged);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", max_loss_gap(losses, fp32, false));
  return buf;
}

// The columns every loss table starts with: recipe, first and last loss, the gap to fp32 (shown
// as gap_cell, kept as a number) and the step it diverged at.
std::vector<Column> loss_columns(const char* recipe_format) {
  return {{.key = "recipe", .header = "recipe", .format = recipe_format},
          {.key = "first", .header = "first", .format = " %10.4f", .json = false},
          {.key = "final_loss", .header = "last", .format = " %10.4f"},
          {.key = "gap", .header = "max |Δ| vs fp32", .format = " %20s", .json = false},
          {.key = "max_abs_gap_to_fp32"},
          {.key = "diverged_at_step"}};
}

std::vector<Value> loss_values(const std::string& recipe, const std::vector<double>& losses,
                               const std::vector<double>& fp32) {
  return {recipe, losses.front(), losses.back(), gap_cell(losses, fp32), max_loss_gap(losses, fp32, false),
          first_non_finite(losses)};
}

Column percent(const std::string& key, const std::string& header, const std::string& format) {
  return {.key = key, .header = header, .format = format, .scale = 100};
}

}  // namespace

Table formats_table(const std::vector<FormatRow>& rows) {
  Table t({{.key = "name", .header = "", .format = "%-5s"},
           {.key = "exponent_bits", .header = "exp", .format = " %4d", .json = false},
           {.key = "mantissa_bits", .header = "man", .format = " %4d", .json = false},
           {.key = "min_subnormal", .header = "min subnormal", .format = " %13.4g", .csv_format = "%.9g"},
           {.key = "min_normal", .header = "min normal", .format = " %13.4g", .csv_format = "%.9g"},
           {.key = "max_finite", .header = "max", .format = " %13.6g", .csv_format = "%.9g"},
           {.key = "epsilon", .header = "ε (1→next)", .format = " %10.4g", .csv_format = "%.9g"},
           {.key = "values_in_1_2", .header = "in [1,2]", .format = " %8lld", .json = false},
           {.key = "finite_patterns", .header = "finite", .format = " %10lld", .csv = false},
           {.key = "round_trip", .header = "round trip", .format = " %10s", .csv = false, .json = false},
           {.key = "round_trip_patterns", .csv = false}},
          "   ");
  for (const FormatRow& r : rows)
    t.add({std::string(r.info.name), std::int64_t{r.info.exponent_bits}, std::int64_t{r.info.mantissa_bits},
           static_cast<double>(r.info.min_subnormal), static_cast<double>(r.info.min_normal),
           static_cast<double>(r.info.max_finite), static_cast<double>(r.info.epsilon), r.in_1_2, r.finite,
           std::string(r.round_trip == r.finite ? "all" : "MISMATCH"), r.round_trip});
  return t;
}

Table recipes_table(const std::vector<PrecisionRun>& runs) {
  std::vector<Column> c = loss_columns("%-13s");
  c.push_back({.key = "skipped_steps", .header = "skipped", .format = " %8lld"});
  c.push_back(percent("mean_zero_grad_fraction", "zero grads", " %13.2f%%"));
  c.push_back(percent("mean_subnormal_grad_fraction", "subnormal", " %13.2f%%"));
  c.push_back(percent("mean_inf_grad_fraction", "inf", " %9.2f%%"));
  c.push_back(percent("mean_nan_grad_fraction", "NaN", " %9.2f%%"));
  c.push_back({.key = "first_step_grad_infs"});
  c.push_back({.key = "first_step_grad_nans"});
  Table t(std::move(c), "   ");
  for (const PrecisionRun& r : runs) {
    std::vector<Value> row = loss_values(r.recipe, r.losses, runs.front().losses);
    row.insert(row.end(), {r.skipped_steps, mean(r.zero_fraction), mean(r.subnormal_fraction), mean(r.inf_fraction),
                           mean(r.nan_fraction), r.histogram_infs, r.histogram_nans});
    t.add(std::move(row));
  }
  return t;
}

Table memory_table(const std::vector<PrecisionRun>& runs) {
  const Recipe order[] = {Recipe::fp32, Recipe::bf16, Recipe::fp16, Recipe::fp16_scaled};
  Table t({{.key = "recipe", .header = "recipe", .format = "%-13s"},
           {.key = "parameters", .header = "params", .format = " %7.2f"},
           {.key = "gradients", .header = "grads", .format = " %7.2f"},
           {.key = "optimizer", .header = "optimizer", .format = " %10.2f"},
           {.key = "states", .header = "states", .format = " %8.2f", .json = false},
           {.key = "step_peak", .header = "step peak", .format = " %12.2f"},
           {.key = "flags", .header = "usp_calc", .format = "   %-38s", .json = false},
           {.key = "usp_calc", .header = "states (peak)", .format = " %lld"}},
          "   ");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const StateMemory& m = runs[i].memory;
    const double n = static_cast<double>(m.parameters_numel);
    const CalcRow row = calc_row(order[i]);
    t.add({runs[i].recipe, per(m.parameters, n), per(m.gradients, n), per(m.optimizer, n), per(m.states(), n),
           per(m.states() + m.step_extra, n), std::string(row.flags),
           std::int64_t{row.bytes.parameters + row.bytes.gradients + row.bytes.optimizer}});
  }
  return t;
}

Table playbook_table() {
  const auto kept = [](const std::string& f) { return f.empty() ? std::string("-") : f; };
  Table t({{.key = "recipe", .format = "%-40s"},
           {.key = "gemm", .format = " GEMM %-5s", .json = false},
           {.key = "master_weights", .format = " %-5s", .json = false},
           {.key = "accumulated_gradients", .format = " %-5s", .json = false},
           {.key = "weights", .format = " %-5s", .json = false},
           {.key = "gradients", .format = " %-5s", .json = false},
           {.key = "adam_first", .format = " %-5s", .json = false},
           {.key = "adam_second", .format = " %-5s", .json = false},
           {.key = "bytes_per_parameter", .format = " %3d bytes"}},
          "   ");
  for (const calc::PrecisionRecipe& r : calc::playbook_precision_recipes())
    t.add({r.name, r.gemm, kept(r.master_weights), kept(r.accumulated_gradients), r.weights, r.gradients,
           r.adam_first, r.adam_second, std::int64_t{r.total_bytes()}});
  return t;
}

Table fp8_table(const PrecisionRun& fp32, const std::vector<Fp8Run>& fp8) {
  std::vector<Column> c = loss_columns("%-15s");
  // One header over the three flushed fractions, right-aligned over the last.
  c.push_back(percent("activations_flushed_fraction", "", " %9.2f%%"));
  c.push_back(percent("weights_flushed_fraction", "", " %8.2f%%"));
  c.push_back(percent("gradients_flushed_fraction", "flushed to 0: act / w / grad", " %8.2f%%"));
  c[c.size() - 3].header_width = c[c.size() - 2].header_width = 0;
  c.back().header_width = 28;
  Table t(std::move(c), "   ");
  for (const Fp8Run& r : fp8) {
    std::vector<Value> row = loss_values(r.recipe, r.losses, fp32.losses);
    row.insert(row.end(), {r.activations.flushed_fraction(), r.weights.flushed_fraction(),
                           r.gradients.flushed_fraction()});
    t.add(std::move(row));
  }
  return t;
}

Table fp8_rates_table() {
  return Table({{.key = "n", .header = "size", .format = "%-6d"},
                {.key = "fp8_tflops", .header = "e4m3 TFLOP/s", .format = " %12.1f"},
                {.key = "bf16_tflops", .header = "bf16 TFLOP/s", .format = " %12.1f"},
                {.key = "ratio", .header = "ratio", .format = " %7.2fx", .json = false}},
               "   ");
}

Table grid_table(const std::vector<FormatRow>& rows) {
  Table t({{.key = "format"}, {.key = "value", .csv_format = "%.9g"}});
  for (const FormatRow& r : rows)
    for (float x : r.grid_1_2) t.add({std::string(r.info.name), static_cast<double>(x)});
  return t;
}

Table loss_curves_table(const std::vector<PrecisionRun>& runs) {
  Table t({{.key = "recipe"}, {.key = "step"}, {.key = "loss"}, {.key = "scale"}, {.key = "applied"},
           {.key = "zero_fraction"}, {.key = "subnormal_fraction"}, {.key = "inf_fraction"}, {.key = "nan_fraction"}});
  for (const PrecisionRun& r : runs)
    for (std::size_t i = 0; i < r.losses.size(); ++i)
      t.add({r.recipe, static_cast<std::int64_t>(i), r.losses[i], static_cast<double>(r.scales[i]),
             std::int64_t{r.applied[i] ? 1 : 0}, r.zero_fraction[i], r.subnormal_fraction[i], r.inf_fraction[i],
             r.nan_fraction[i]});
  return t;
}

Table grad_histogram_table(const std::vector<PrecisionRun>& runs) {
  Table t({{.key = "recipe"}, {.key = "log2_low"}, {.key = "count"}});
  for (const PrecisionRun& r : runs) {
    t.add({r.recipe, std::string("zero"), r.histogram_zeros});
    t.add({r.recipe, std::string("inf"), r.histogram_infs});
    t.add({r.recipe, std::string("nan"), r.histogram_nans});
    for (std::size_t i = 0; i < r.log2_histogram.size(); ++i)
      if (r.log2_histogram[i] > 0)
        t.add({r.recipe, std::int64_t{static_cast<int>(i) + PrecisionRun::kHistLow}, r.log2_histogram[i]});
  }
  return t;
}

Table fp8_curves_table(const PrecisionRun& fp32, const std::vector<Fp8Run>& fp8) {
  Table t({{.key = "recipe"}, {.key = "step"}, {.key = "loss"}});
  for (std::size_t i = 0; i < fp32.losses.size(); ++i) t.add({std::string("fp32"), static_cast<std::int64_t>(i), fp32.losses[i]});
  for (const Fp8Run& r : fp8)
    for (std::size_t i = 0; i < r.losses.size(); ++i) t.add({r.recipe, static_cast<std::int64_t>(i), r.losses[i]});
  return t;
}

}  // namespace usp::ch14
