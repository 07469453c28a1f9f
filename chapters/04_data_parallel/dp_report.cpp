#include "chapters/04_data_parallel/dp_report.hpp"

#include <algorithm>
#include <cmath>

namespace usp::ch04 {

namespace {

constexpr double kMiB = 1048576.0;

// "model.layers.3.mlp.down_proj.weight" -> "layers.3.mlp.down_proj", for the printed plan.
std::string short_name(std::string name) {
  if (name.rfind("model.", 0) == 0) name = name.substr(6);
  const std::string suffix = ".weight";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::fabs(b[i]));
  return worst;
}

}  // namespace

report::Table bucket_plan_table(const BucketPlan& plan, const std::vector<ParamInfo>& layout) {
  report::Table t({{.key = "bucket", .header = "bucket", .format = "%6lld"},
                   {.key = "first_param"},
                   {.key = "last_param"},
                   {.key = "num_params", .header = "params", .format = " %6lld"},
                   {.key = "span", .header = "from .. to (backward order)", .format = "  %-60s", .csv = false},
                   {.key = "begin"},
                   {.key = "end"},
                   {.key = "bytes", .header = "bytes", .format = " %10lld"}});
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& k = plan.buckets[b];
    const std::string& first = layout[static_cast<std::size_t>(k.params.front())].name;
    const std::string& last = layout[static_cast<std::size_t>(k.params.back())].name;
    const std::string span = short_name(first) + (k.params.size() > 1 ? " .. " + short_name(last) : "");
    t.add({static_cast<std::int64_t>(b), first, last, static_cast<std::int64_t>(k.params.size()), span, k.begin, k.end,
           k.bytes});
  }
  return t;
}

void print_plan(std::ostream& out, const BucketPlan& plan, const report::Table& table) {
  out << "bucket plan: cap " << plan.cap_bytes << " bytes, " << plan.buckets.size()
      << " buckets, filled in reverse parameter order\n";
  table.print(out);
}

void print_losses(std::ostream& out, const std::vector<DpVariant>& runs, const std::vector<double>& baseline) {
  std::vector<report::Column> c = {{.header = "step", .format = "%4lld"}};
  if (!baseline.empty()) c.push_back({.header = "1 rank", .format = "  %11.7f"});
  for (const auto& r : runs) c.push_back({.header = dp_mode_name(r.mode), .format = "  %11.7f"});
  report::Table t(std::move(c));
  for (std::size_t s = 0; s < runs.front().losses.size(); ++s) {
    std::vector<report::Value> row = {static_cast<std::int64_t>(s)};
    if (!baseline.empty()) row.emplace_back(baseline[s]);
    for (const auto& r : runs) row.emplace_back(r.losses[s]);
    t.add(std::move(row));
  }
  out << "\nlosses (mean over the global batch)\n";
  t.print(out);
  if (baseline.empty()) return;
  out << "  max |Δloss|/loss vs 1 rank:";
  char cell[64];
  for (const auto& r : runs) {
    std::snprintf(cell, sizeof cell, "  %s %.1e", dp_mode_name(r.mode), max_rel_diff(r.losses, baseline));
    out << cell;
  }
  out << "  (fp32 reduction order)\n";
}

report::Table variants_table(const std::vector<DpVariant>& runs, const VariantsContext& c) {
  // T: on the terminal (per step, mean over the ranks and the timed steps); C: variants.csv;
  // J: summary.json. The files keep the raw sums in µs where the terminal shows ms.
  std::vector<report::Column> columns = {
      {.key = "mode", .header = "variant", .format = "%-10s"},                                  // T C J
      {.key = "dp", .json = false},                                                            //   C
      {.key = "grad_acc", .json = false},                                                      //   C
      {.key = "global_batch", .json = false},                                                  //   C
      {.key = "losses", .csv = false},                                                         //     J
      {.key = "step_ms", .header = "step ms", .format = " %8.1f", .json = false},              // T C
      {.key = "step_seconds", .csv = false},                                                   //     J
      {.key = "tokens_per_s", .header = "tokens/s", .format = " %9.0f", .json = false},        // T C
      {.key = "tokens_per_second", .csv = false},                                              //     J
      {.key = "all_reduces_per_step", .header = "all-reduces", .format = " %12lld"},           // T C J
      {.key = "bytes_per_step", .header = "bytes/step", .format = " %11lld"},                  // T C J
      {.key = "ring_bytes", .json = false},                                                    //   C
      {.key = "quiet_micro_batches", .csv = false},                                            //     J
      {.key = "backward_us", .csv = false},                                                    //     J
      {.key = "comm_us", .csv = false},                                                        //     J
      {.key = "hidden_us", .csv = false},                                                      //     J
      {.key = "backward_ms_per_step", .header = "backward ms", .format = " %12.1f", .json = false},  // T C
      {.key = "comm_ms_per_step", .header = "comm ms", .format = " %9.1f", .json = false},     // T C
      {.key = "hidden_ms_per_step", .json = false},                                            //   C
      {.key = "hidden_fraction", .header = "hidden", .format = " %7.1f%%", .scale = 100},      // T C J
      {.key = "exposed_ms", .header = "exposed ms", .format = " %11.1f", .csv = false, .json = false},  // T
      {.key = "comm_spans", .json = false},                                                    //   C
      {.key = "overlapping_spans", .json = false},                                             //   C
      {.key = "peak_bytes", .header = "peak MiB", .format = " %9.2f", .scale = 1 / kMiB},      // T C J
  };
  if (!c.baseline.empty()) columns.push_back({.key = "max_rel_loss_diff_vs_baseline", .csv = false});  // J
  report::Table t(std::move(columns));
  for (const auto& r : runs) {
    const double steps_ranks = static_cast<double>(r.timed_steps) * c.dp;
    const double tokens_per_s = static_cast<double>(c.global_batch * c.seq) / r.step_seconds;
    const CommOverlap& o = r.overlap;
    std::vector<report::Value> row = {dp_mode_name(r.mode), std::int64_t{c.dp}, c.grad_acc, c.global_batch,
                                      r.losses, r.step_seconds * 1e3, r.step_seconds, tokens_per_s, tokens_per_s,
                                      r.collectives_per_step, r.bytes_per_step, c.ring_bytes, r.quiet_micro_batches,
                                      o.backward_us, o.comm_us, o.hidden_us, o.backward_us / steps_ranks / 1e3,
                                      o.comm_us / steps_ranks / 1e3, o.hidden_us / steps_ranks / 1e3, o.fraction(),
                                      o.exposed_us() / steps_ranks / 1e3, std::int64_t{o.comm_spans},
                                      std::int64_t{o.overlapping_spans}, r.peak_total};
    if (!c.baseline.empty()) row.emplace_back(max_rel_diff(r.losses, c.baseline));
    t.add(std::move(row));
  }
  return t;
}

bool check_counts(std::ostream& out, const std::vector<DpVariant>& runs, const VariantsContext& c) {
  bool ok = true;
  for (const auto& r : runs) {
    // Exact counts, every rank (the bytes: rank 0's; every rank sends the same in a ring).
    const bool count_ok = r.collectives_per_step == r.expected_collectives;
    const bool bytes_ok =
        std::fabs(static_cast<double>(r.bytes_per_step) - c.ring_bytes) < static_cast<double>(r.collectives_per_step);
    if (!count_ok || !bytes_ok || !r.quiet_micro_batches) {
      ok = false;
      out << "error: " << dp_mode_name(r.mode) << ": " << r.collectives_per_step << " all-reduces per step (expected "
          << r.expected_collectives << "), " << r.bytes_per_step << " bytes (expected " << c.ring_bytes << "), "
          << (r.quiet_micro_batches ? "" : "an all-reduce during a non-final micro-batch") << "\n";
    }
  }
  if (c.grad_acc > 1 && ok)
    out << "  gradient accumulation: no all-reduce during the " << c.grad_acc - 1 << " non-final micro-batch"
        << (c.grad_acc > 2 ? "es" : "") << " of any step, on any rank; all of them in the last one\n";
  return ok;
}

}  // namespace usp::ch04
