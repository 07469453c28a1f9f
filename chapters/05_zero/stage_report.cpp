#include "chapters/05_zero/stage_report.hpp"

#include <algorithm>
#include <cmath>

#include "chapters/05_zero/unit_schedule.hpp"
#include "common/report/row_gather.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/variant_numbers.hpp"
#include "common/train/variants_report.hpp"

namespace usp::ch05 {

namespace {

constexpr double kMiB = 1048576.0;
constexpr CommOp kCollectives[] = {CommOp::all_reduce, CommOp::reduce_scatter, CommOp::all_gather};

// zero_stages.csv's columns, one row per stage and rank (rank_row).
report::Table stage_numbers_table() {
  std::vector<report::Column> c = {{.key = "stage"}, {.key = "label"}, {.key = "prefetch"}, {.key = "rank"}};
  add_memory_columns(c, "peak_", MemColumns::all);
  add_memory_columns(c, "resident_", MemColumns::state);
  add_memory_columns(c, "formula_", MemColumns::state);
  c.push_back({.key = "peak_total"});
  for (CommOp op : kCollectives) c.push_back({.key = std::string("sent_") + comm_op_name(op)});
  c.push_back({.key = "sent_total"});
  c.push_back({.key = "steps"});
  c.push_back({.key = "max_units_held"});
  return report::Table(std::move(c));
}

// This rank's row of that table.
std::vector<report::Value> rank_row(const StageResult& r, int rank, std::int64_t steps) {
  std::vector<report::Value> v = {std::int64_t{r.options.stage}, stage_label(r.options),
                                  std::int64_t{r.options.prefetch ? 1 : 0}, std::int64_t{rank}};
  add_memory_values(v, r.peak, MemColumns::all);
  add_memory_values(v, r.resident, MemColumns::state);
  v.insert(v.end(), {r.formula.parameters, r.formula.gradients, r.formula.optimizer, r.peak.total()});
  for (CommOp op : kCollectives) v.emplace_back(static_cast<std::int64_t>(r.comm.sent(op)));
  v.insert(v.end(), {static_cast<std::int64_t>(r.comm.total_sent()), steps, r.max_units_held});
  return v;
}

// The mean over the ranks of a number each measured.
double rank_mean(Communicator& metrics, double v) {
  double sum = 0;
  for (double x : report::gather_rows(metrics, v)) sum += x;
  return sum / metrics.size();
}

// Stage i's label, then rank 0's values of `keys`, each divided by `divisor`.
std::vector<report::Value> rank0_row(const StagesReport& s, std::size_t i, const std::vector<std::string>& keys,
                                     std::int64_t divisor = 1) {
  std::vector<report::Value> row;
  row.emplace_back(stage_label(s.results[i].options));
  for (const std::string& k : keys) row.emplace_back(s.rank0(i, k) / divisor);
  return row;
}

void json_object(JsonWriter& j, const std::string& name, const StagesReport& s, std::size_t i,
                 const std::string& prefix, const std::vector<std::string>& keys, std::int64_t divisor = 1) {
  j.key(name).begin_object();
  for (const std::string& k : keys) j.field(k, s.rank0(i, prefix + k) / divisor);
  j.end_object();
}

}  // namespace

std::int64_t StagesReport::rank0(std::size_t i, const std::string& key) const {
  return std::get<std::int64_t>(numbers.at(i * static_cast<std::size_t>(dp), key));
}

StagesReport gather_stages(Communicator& metrics, std::vector<StageResult> results, std::int64_t steps) {
  StagesReport s{std::move(results), stage_numbers_table(), {}, metrics.size(), steps};
  for (const StageResult& r : s.results) report::add_every_rank_row(metrics, s.numbers, rank_row(r, metrics.rank(), steps));
  for (const StageResult& r : s.results)
    s.overlap.push_back({rank_mean(metrics, r.gather_hidden), rank_mean(metrics, r.reduce_hidden),
                         rank_mean(metrics, r.traced_step_ms)});
  return s;
}

void print_losses(std::ostream& out, const StagesReport& s) {
  std::vector<report::Column> c = {{.key = "label", .header = "stage", .format = "%-22s"}};
  const std::vector<StageResult>& results = s.results;
  for (std::size_t step = 0; step < results[0].losses.size(); ++step)
    c.push_back({.header = "loss " + std::to_string(step), .format = "  %-13.7f"});
  c.push_back({.header = "max|Δw| vs " + stage_label(results[0].options), .format = "  %.3g"});
  report::Table t(std::move(c));
  for (const StageResult& r : results) {
    std::vector<report::Value> row = {stage_label(r.options)};
    row.insert(row.end(), r.losses.begin(), r.losses.end());
    // Built in place: a temporary Value moved in made GCC 12 -O2 read its inactive string as maybe uninitialised.
    row.emplace_back(max_abs_diff(r.parameters, results[0].parameters));
    t.add(std::move(row));
  }
  out << "\n1. The same steps under each stage (losses are the mean over the global batch)\n";
  t.print(out);
}

void print_memory(std::ostream& out, const StagesReport& s, const TrainingConfig& cfg) {
  bool all_equal = true;  // on every rank
  for (std::size_t r = 0; r < s.numbers.rows(); ++r)
    for (MemCategory c : mem_categories(MemColumns::state))
      all_equal = all_equal && s.numbers.at(r, std::string("resident_") + mem_category_name(c)) ==
                                   s.numbers.at(r, std::string("formula_") + mem_category_name(c));
  out << "\n2. Memory per rank (rank 0; MiB): the state kept between steps, and the peaks.\n"
      << "   Kept state measured by the tracker = the ZeRO formula (state_bytes.hpp), on every rank: "
      << (all_equal ? "yes, exactly" : "NO (see zero_stages.csv)") << "\n";
  const auto mib = [](const char* header, const char* format) {
    return report::Column{.header = header, .format = format, .scale = 1 / kMiB};
  };
  report::Table t({{.header = "", .format = "%-22s"}, mib("params", " %10.3f"), mib("grads", " %10.3f"),
                   mib("optimizer", " %10.3f"), mib("peak:param", " | %10.3f"), mib("grads", " %10.3f"),
                   mib("optimizer", " %10.3f"), mib("activation", " %10.3f"), mib("comm buf", " %10.3f")});
  for (std::size_t i = 0; i < s.results.size(); ++i)
    t.add(rank0_row(s, i, {"resident_parameter", "resident_gradient", "resident_optimizer_state", "peak_parameter",
                           "peak_gradient", "peak_optimizer_state", "peak_activation", "peak_comm_buffer"}));
  t.print(out);
  char line[320];
  for (std::size_t i = 0; i < s.results.size(); ++i) {
    const ZeroOptions& o = s.results[i].options;
    if (o.stage != 3) continue;
    const int plan = max_units_held(unit_schedule(static_cast<int>(cfg.model.layers) + 2, cfg.model.tied_embeddings, o.prefetch));
    std::snprintf(line, sizeof line, "  %s held at most %lld units' full parameters at once (the plan says %d)\n",
                  stage_label(o).c_str(), static_cast<long long>(s.rank0(i, "max_units_held")), plan);
    out << line;
  }
  for (std::size_t i = 0; i < s.results.size(); ++i) {
    if (s.results[i].options.stage != 3) continue;
    const StagesReport::Overlap& v = s.overlap[i];
    std::snprintf(line, sizeof line,
                  "  %s, traced last step: %.1f ms; time the all-gathers ran while the rank computed: %.0f%%, "
                  "the reduce-scatters: %.0f%% (mean over ranks)\n",
                  stage_label(s.results[i].options).c_str(), v.step_ms, 100 * v.gather_hidden, 100 * v.reduce_hidden);
    out << line;
  }
}

void print_comm(std::ostream& out, const StagesReport& s) {
  out << "\n3. Bytes sent per step (rank 0; MiB) by collective\n";
  report::Table t({{.header = "", .format = "%-22s"},
                   {.header = "all-reduce", .format = " %12.3f", .scale = 1 / kMiB},
                   {.header = "reduce-scatter", .format = " %14.3f", .scale = 1 / kMiB},
                   {.header = "all-gather", .format = " %12.3f", .scale = 1 / kMiB},
                   {.header = "total", .format = " %12.3f", .scale = 1 / kMiB},
                   {.header = "× DP", .format = " %10.3f"}});
  const double base = static_cast<double>(s.rank0(0, "sent_total"));
  for (std::size_t i = 0; i < s.results.size(); ++i) {
    std::vector<report::Value> row =
        rank0_row(s, i, {"sent_all_reduce", "sent_reduce_scatter", "sent_all_gather", "sent_total"}, s.steps);
    row.emplace_back(base > 0 ? static_cast<double>(s.rank0(i, "sent_total")) / base : 0.0);
    t.add(std::move(row));
  }
  t.print(out);
  out << "  (ring algorithms: an all-reduce of Ψ elements sends 2(N_d-1)/N_d·Ψ per rank; a reduce-scatter or an\n"
         "   all-gather (N_d-1)/N_d·Ψ. ZeRO-2 and -3 reduce-scatter after every micro-batch.)\n";
}

void write_stages_json(JsonWriter& j, const StagesReport& s, double tokens_per_step) {
  const std::vector<std::string> state = {"parameter", "gradient", "optimizer_state"};
  std::vector<std::string> categories;
  for (MemCategory c : mem_categories(MemColumns::all)) categories.push_back(mem_category_name(c));
  j.key("stages").begin_array();
  for (std::size_t i = 0; i < s.results.size(); ++i) {
    const StageResult& r = s.results[i];
    j.begin_object();
    j.field("stage", r.options.stage).field("label", stage_label(r.options)).field("prefetch", r.options.prefetch);
    j.key("losses").array(r.losses);
    j.field("max_param_diff_vs_first", max_abs_diff(r.parameters, s.results[0].parameters));
    json_object(j, "resident_rank0", s, i, "resident_", state);
    json_object(j, "formula_rank0", s, i, "formula_", state);
    json_object(j, "peak_rank0", s, i, "peak_", categories);
    json_object(j, "sent_per_step_rank0", s, i, "sent_", {"all_reduce", "reduce_scatter", "all_gather", "total"},
                s.steps);
    j.field("max_units_held", s.rank0(i, "max_units_held"));
    if (r.options.stage == 3) {
      j.key("trace").begin_object();
      j.field("step_ms", s.overlap[i].step_ms).field("all_gather_hidden_fraction", s.overlap[i].gather_hidden);
      j.field("reduce_scatter_hidden_fraction", s.overlap[i].reduce_hidden);
      j.end_object();
    }
    j.field("tokens_per_second", static_cast<double>(s.steps) * tokens_per_step / r.seconds);
    j.end_object();
  }
  j.end_array();
}

void print_calculator(std::ostream& out, const std::vector<calc::SweepRow>& sweep) {
  out << "\n4. The calculator: " << sweep.front().setup.model.name << " at DP = " << sweep.front().setup.dp
      << ", mixed precision, no recomputation, b = 1 (GiB per GPU)\n";
  calc::print_sweep_table(out, sweep, 4096, "stage", [](const calc::TrainingSetup& s) {
    return s.zero == 0 ? std::string("DP") : "ZeRO-" + std::to_string(s.zero);
  });
}

}  // namespace usp::ch05
