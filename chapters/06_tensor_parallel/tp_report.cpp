#include "chapters/06_tensor_parallel/tp_report.hpp"

#include <algorithm>
#include <cstdio>

#include "common/report/row_gather.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/variant_numbers.hpp"
#include "common/train/variants_report.hpp"

namespace usp::ch06 {

namespace {

constexpr double kMiB = 1048576.0, kKiB = 1024.0;

// The collectives the layouts use: on the tensor-parallel group all three, on the data-parallel
// group the gradient all-reduce.
const std::vector<GroupOps> kGroups = {{"tp", {CommOp::all_reduce, CommOp::reduce_scatter, CommOp::all_gather}},
                                       {"dp", {CommOp::all_reduce}}};

std::string tp_key(const char* what, CommOp op) { return traffic_key(what, "tp", op); }
std::string dp_key(const char* what) { return traffic_key(what, "dp", CommOp::all_reduce); }

// tp_variants.csv's columns: the variant's description, then what each rank measured
// (rank_row, in this order), the step time and the throughput.
report::Table variant_numbers_table() {
  std::vector<report::Column> c = {{.key = "label"}, {.key = "tp"}, {.key = "sp"}, {.key = "dp"},
                                   {.key = "micro_batches"}, {.key = "rank"}, {.key = "tp_rank"}, {.key = "dp_rank"}};
  add_rank_memory_columns(c);
  c.push_back({.key = "layer_activation_measured"});
  c.push_back({.key = "layer_activation_formula"});
  add_traffic_columns(c, kGroups);
  c.push_back({.key = "comm_matches_count"});  // every op's bytes and calls, on both groups
  c.push_back({.key = "step_seconds"});
  c.push_back({.key = "tokens_per_second"});
  return report::Table(std::move(c));
}

// This rank's row of that table.
std::vector<report::Value> rank_row(const VariantResult& r, int rank, std::int64_t steps, double tokens_per_step) {
  const TpLayout& l = r.variant.layout;
  std::vector<report::Value> v = {l.label(),           std::int64_t{l.tp},     std::int64_t{l.sp ? 1 : 0},
                                  std::int64_t{l.dp},  r.variant.micro_batches, std::int64_t{rank},
                                  std::int64_t{r.tp_rank}, std::int64_t{r.dp_rank}};
  add_rank_memory_values(v, r.memory);
  v.insert(v.end(), {r.layer_saved, r.layer_formula});
  const std::vector<GroupTraffic> traffic = {{r.tp_comm, r.counted.tp_bytes, r.counted.tp_calls},
                                             {r.dp_comm, r.counted.dp_bytes, r.counted.dp_calls}};
  add_traffic_values(v, kGroups, traffic, steps);
  v.emplace_back(std::int64_t{traffic_matches_count(traffic, steps) ? 1 : 0});
  const double seconds = r.median_step_seconds();
  v.insert(v.end(), {seconds, seconds > 0 ? tokens_per_step / seconds : 0.0});
  return v;
}

std::int64_t as_int(const report::Value& v) { return std::get<std::int64_t>(v); }

// The layout's label, padded to 18 characters on the terminal.
report::Column label_column() { return padded_label_column(18); }

// Every variant's label, losses, final parameters and file name, in the report's order.
std::vector<VariantLosses> losses_of(const VariantsReport& r) { return variant_losses(r.results, variant_name); }

}  // namespace

bool VariantsReport::all_equal(const std::string& key, const std::string& other) const {
  for (std::size_t row = 0; row < numbers.rows(); ++row)
    if (numbers.at(row, key) != numbers.at(row, other)) return false;
  return true;
}

VariantsReport gather_variants(Communicator& metrics, std::vector<VariantResult> results, std::int64_t steps,
                               double tokens_per_step, LossAgreement losses) {
  VariantsReport r{{std::move(results), variant_numbers_table(), metrics.size(), steps, tokens_per_step, losses}};
  for (const VariantResult& v : r.results)
    report::add_every_rank_row(metrics, r.numbers, rank_row(v, metrics.rank(), steps, tokens_per_step));
  return r;
}

void print_losses(std::ostream& out, const VariantsReport& r) {
  out << "\n1. The same steps on the same global batch under each layout (the mean loss over the batch)\n";
  const std::string first = r.results[0].variant.layout.label();
  print_losses_side_by_side(out, losses_of(r), label_column(), first, r.losses, "layouts");
}

void print_memory(std::ostream& out, const VariantsReport& r) {
  out << "\n2. Memory per rank (rank 0; MiB): the state kept between steps, and the peaks\n";
  const auto mib = [](const char* header, const char* format) {
    return report::Column{.header = header, .format = format, .scale = 1 / kMiB};
  };
  report::Table t({label_column(), mib("params", " %8.3f"), mib("grads", " %8.3f"), mib("optimizer", " %9.3f"),
                   mib("peak:param", " | %10.3f"), mib("grads", " %8.3f"), mib("optimizer", " %9.3f"),
                   mib("activation", " %10.3f"), mib("comm buf", " %8.3f"), mib("temporary", " %9.3f"),
                   mib("total", " %8.3f")});
  for (std::size_t i = 0; i < r.results.size(); ++i)
    t.add(r.rank0_row(i, {"resident_parameter", "resident_gradient", "resident_optimizer_state", "peak_parameter",
                           "peak_gradient", "peak_optimizer_state", "peak_activation", "peak_comm_buffer",
                           "peak_temporary", "peak_total"}));
  t.print(out);
  out << "  (the peaks of the categories need not be simultaneous: total is the peak of their sum)\n";

  out << "\n   One decoder layer's saved activations (rank 0; KiB): measured by the tracker while the layer\n"
         "   ran forward, and the course's count (tp_formulas.hpp: the stream's tensors whole on every rank\n"
         "   under TP, split by rows under SP; the rest split by t); ratio: measured / the first layout's\n";
  const double base = static_cast<double>(as_int(r.at(0, 0, "layer_activation_measured")));
  report::Table a({label_column(), {.header = "measured", .format = " %10.1f", .scale = 1 / kKiB},
                   {.header = "formula", .format = " %10.1f", .scale = 1 / kKiB},
                   {.header = "ratio", .format = " %8.3f"}});
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    std::vector<report::Value> row = r.rank0_row(i, {"layer_activation_measured", "layer_activation_formula"});
    row.emplace_back(base > 0 ? static_cast<double>(as_int(r.at(i, 0, "layer_activation_measured"))) / base : 0.0);
    a.add(std::move(row));
  }
  a.print(out);
  const bool exact = r.all_equal("layer_activation_measured", "layer_activation_formula");
  out << "  measured = formula on every rank: " << (exact ? "yes, exactly" : "NO (see tp_variants.csv)") << "\n";
}

void print_comm(std::ostream& out, const VariantsReport& r) {
  out << "\n3. Bytes sent per step (rank 0; MiB) by group and collective, and the calls per step\n";
  const auto mib = [](const char* header, const char* format) {
    return report::Column{.header = header, .format = format, .scale = 1 / kMiB};
  };
  report::Table t({label_column(), mib("tp all-reduce", " %13.3f"), mib("reduce-scatter", " %14.3f"),
                   mib("all-gather", " %10.3f"), mib("dp all-reduce", " %13.3f"),
                   {.header = "calls: AR", .format = " | %9lld"}, {.header = "RS", .format = " %4lld"},
                   {.header = "AG", .format = " %4lld"}, {.header = "dp AR", .format = " %5lld"}});
  for (std::size_t i = 0; i < r.results.size(); ++i)
    t.add(r.rank0_row(i, {tp_key("sent", CommOp::all_reduce), tp_key("sent", CommOp::reduce_scatter),
                           tp_key("sent", CommOp::all_gather), dp_key("sent"), tp_key("calls", CommOp::all_reduce),
                           tp_key("calls", CommOp::reduce_scatter), tp_key("calls", CommOp::all_gather),
                           dp_key("calls")}));
  t.print(out);
  out << "  (per micro-batch and layer: TP forward 2 all-reduces of the stream [N, C], backward 2; TP+SP forward\n"
         "   2 all-gathers + 2 reduce-scatters, backward 2 all-gathers of the output gradient + 2 reduce-scatters\n"
         "   + 2 all-gathers re-gathering the column blocks' inputs; plus the embedding, the head and the loss's\n"
         "   3 all-reduces of N floats; SP adds the norm weights' gradient all-reduces once per step)\n"
      << "  measured = the operator count (tp_formulas.hpp), bytes and calls of every op, on every rank: "
      << (r.holds_on_every_rank("comm_matches_count") ? "yes, exactly" : "NO (see tp_variants.csv)") << "\n";
}

void print_speed(std::ostream& out, const VariantsReport& r) {
  out << "\n4. Step time (rank 0; the median of the steps, wall clock) and throughput\n";
  report::Table t({label_column(), {.header = "step ms", .format = " %9.1f", .scale = 1e3},
                   {.header = "tokens/s", .format = " %10.0f"}});
  for (std::size_t i = 0; i < r.results.size(); ++i) t.add(r.rank0_row(i, {"step_seconds", "tokens_per_second"}));
  t.print(out);
  out << "  (CPU ranks sharing a few cores: these times mostly say how the cores were shared. On GPUs, TP's\n"
         "   collectives sit on the critical path: each block waits for its all-reduce (or reduce-scatter)\n"
         "   before the next can start, which is why TP stays within a node's fast links)\n";
}

}  // namespace usp::ch06
