#include "chapters/07_context_parallel/cp_report.hpp"

#include <algorithm>
#include <cstdio>

#include "common/report/row_gather.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/variant_numbers.hpp"
#include "common/train/variants_report.hpp"

namespace usp::ch07 {

namespace {

constexpr double kMiB = 1048576.0, kKiB = 1024.0;
// The collectives of the attentions on the context-parallel group; the gradient's all-reduce on
// the dp·cp group.
constexpr CommOp kCpOps[] = {CommOp::send, CommOp::recv, CommOp::all_gather, CommOp::reduce_scatter,
                             CommOp::all_to_all};
const std::vector<GroupOps> kGroups = {{"cp", {std::begin(kCpOps), std::end(kCpOps)}},
                                       {"dp_cp", {CommOp::all_reduce}}};

std::string cp_key(const char* what, CommOp op) { return traffic_key(what, "cp", op); }
std::string dp_cp_key(const char* what) { return traffic_key(what, "dp_cp", CommOp::all_reduce); }

// cp_variants.csv's columns: the variant's description, then what each rank measured
// (rank_row, in this order), the times and the throughput.
report::Table variant_numbers_table() {
  std::vector<report::Column> c = {{.key = "label"}, {.key = "attention"}, {.key = "sharding"}, {.key = "cp"},
                                   {.key = "dp"},    {.key = "micro_batches"}, {.key = "rank"}};
  for (const char* k : {"cp_rank", "dp_rank"}) c.push_back({.key = k});
  add_rank_memory_columns(c);
  for (const char* k : {"attention_forward_peak_temporary", "attention_kv_formula", "attention_kv_measured",
                        "attention_blocks"})
    c.push_back({.key = k});
  add_traffic_columns(c, kGroups);
  c.push_back({.key = "comm_matches_count"});  // every op's bytes and calls, on both groups
  c.push_back({.key = "attention_seconds"});   // per step, the median
  c.push_back({.key = "hidden_fraction"});     // traced variants; -1 otherwise
  c.push_back({.key = "step_seconds"});
  c.push_back({.key = "tokens_per_second"});
  return report::Table(std::move(c));
}

// The variant's description: the first columns of both tables.
std::vector<report::Value> layout_cells(const CpLayout& l) {
  return {l.label(), std::string(attention_name(l.attention)), std::string(sharding_name(l.sharding)),
          std::int64_t{l.cp}};
}

// This rank's row of cp_variants.csv.
std::vector<report::Value> rank_row(const VariantResult& r, int rank, std::int64_t steps, double tokens_per_step) {
  std::vector<report::Value> v = layout_cells(r.variant.layout);
  v.insert(v.end(), {std::int64_t{r.variant.layout.dp}, r.variant.micro_batches, std::int64_t{rank},
                     std::int64_t{r.cp_rank}, std::int64_t{r.dp_rank}});
  add_rank_memory_values(v, r.memory);
  std::int64_t blocks = 0;
  for (const auto& s : r.blocks_per_step) blocks += static_cast<std::int64_t>(s.size());
  v.insert(v.end(), {r.attention_peak, r.kv_formula, r.kv_measured, blocks});
  const std::vector<GroupTraffic> traffic = {{r.cp_comm, r.counted.cp_bytes, r.counted.cp_calls},
                                             {r.dp_cp_comm, r.counted.dp_cp_bytes, r.counted.dp_cp_calls}};
  add_traffic_values(v, kGroups, traffic, steps);
  v.emplace_back(std::int64_t{traffic_matches_count(traffic, steps) ? 1 : 0});
  const double seconds = r.median_step_seconds();
  v.insert(v.end(), {r.median_attention_seconds(), r.hidden, seconds, seconds > 0 ? tokens_per_step / seconds : 0.0});
  return v;
}

report::Table blocks_table() {
  return report::Table({{.key = "label"}, {.key = "attention"}, {.key = "sharding"}, {.key = "cp"}, {.key = "rank"},
                        {.key = "step"}, {.key = "q_chunk"}, {.key = "k_chunk"}, {.key = "diagonal"}});
}

// A block this rank computed, and at which step.
struct StepBlock {
  std::int64_t step = 0;
  Block block;
};

std::vector<StepBlock> step_blocks(const VariantResult& r) {
  std::vector<StepBlock> v;
  for (std::size_t step = 0; step < r.blocks_per_step.size(); ++step)
    for (const Block& b : r.blocks_per_step[step]) v.push_back({static_cast<std::int64_t>(step), b});
  return v;
}

std::int64_t as_int(const report::Value& v) { return std::get<std::int64_t>(v); }
double as_double(const report::Value& v) { return std::get<double>(v); }

// The variant's label, padded to 36 characters on the terminal.
report::Column label_column() { return padded_label_column(36); }

// Every variant's label, losses, final parameters and file name, in the report's order.
std::vector<VariantLosses> losses_of(const VariantsReport& r) { return variant_losses(r.results, variant_name); }

}  // namespace

VariantsReport gather_variants(Communicator& metrics, std::vector<VariantResult> results, std::int64_t steps,
                               double tokens_per_step, LossAgreement losses) {
  VariantsReport r{{std::move(results), variant_numbers_table(), metrics.size(), steps, tokens_per_step, losses},
                   blocks_table()};
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    const VariantResult& v = r.results[i];
    report::add_every_rank_row(metrics, r.numbers, rank_row(v, metrics.rank(), steps, tokens_per_step));
    // The blocks of the first replica's cp ranks (the other replicas compute the same).
    const std::vector<std::vector<StepBlock>> blocks = report::gather_row_lists(metrics, step_blocks(v));
    for (int k = 0; k < r.world; ++k) {
      if (as_int(r.at(i, k, "dp_rank")) != 0) continue;
      for (const StepBlock& b : blocks[static_cast<std::size_t>(k)]) {
        std::vector<report::Value> row = layout_cells(v.variant.layout);
        row.insert(row.end(), {r.at(i, k, "cp_rank"), b.step, std::int64_t{b.block.q_chunk},
                               std::int64_t{b.block.k_chunk}, std::int64_t{b.block.diagonal ? 1 : 0}});
        r.blocks.add(std::move(row));
      }
    }
  }
  return r;
}

void print_losses(std::ostream& out, const VariantsReport& r) {
  out << "\n1. The same steps on the same global batch with each attention and layout (the mean loss over the "
         "batch)\n";
  print_losses_side_by_side(out, losses_of(r), label_column(), "the first", r.losses, "variants");
}

void print_work(std::ostream& out, const VariantsReport& r) {
  // The cp ranks of the first replica: world ranks whose dp_rank is 0, in cp order.
  const int cp = r.results[0].variant.layout.cp;
  std::vector<report::Column> c = {label_column()};
  const auto rank_header = [](int k, const char* unit) {  // appended piece by piece: GCC 12's -Wrestrict
    std::string h = "r";                                  // misfires on "r" + std::to_string(k) + unit
    h += std::to_string(k);
    h += unit;
    return h;
  };
  for (int k = 0; k < cp; ++k) c.push_back({.header = rank_header(k, ""), .format = " %4lld"});
  c.push_back({.header = "max/min", .format = " %7.2f"});
  for (int k = 0; k < cp; ++k) c.push_back({.header = rank_header(k, " ms"), .format = " %7.2f", .scale = 1e3});
  c.push_back({.header = "max/min", .format = " %7.2f"});
  report::Table t(std::move(c));
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    std::vector<std::int64_t> blocks(static_cast<std::size_t>(cp));
    std::vector<double> ms(static_cast<std::size_t>(cp));
    for (int k = 0; k < r.world; ++k) {
      if (as_int(r.at(i, k, "dp_rank")) != 0) continue;
      const auto c_rank = static_cast<std::size_t>(as_int(r.at(i, k, "cp_rank")));
      blocks[c_rank] = as_int(r.at(i, k, "attention_blocks"));
      ms[c_rank] = as_double(r.at(i, k, "attention_seconds"));
    }
    std::vector<report::Value> row = {r.results[i].variant.layout.label()};
    for (std::int64_t b : blocks) row.emplace_back(b);
    const auto [blo, bhi] = std::minmax_element(blocks.begin(), blocks.end());
    row.emplace_back(*blo > 0 ? static_cast<double>(*bhi) / static_cast<double>(*blo) : 0.0);
    for (double s : ms) row.emplace_back(s);
    const auto [tlo, thi] = std::minmax_element(ms.begin(), ms.end());
    row.emplace_back(*tlo > 0 ? *thi / *tlo : 0.0);
    t.add(std::move(row));
  }
  out << "\n2. Each cp rank's attention: the blocks of the causal mask it computed in one forward (a block: one\n"
         "   chunk of its queries against one chunk of keys; the diagonal's triangle counts as one), and its\n"
         "   forward attention compute per step (ms, median over the steps; plots/ch07_attention_time.py)\n";
  t.print(out);
  out << "  (the all-to-all computes every token of its heads: no chunk blocks, see the lesson;\n"
         "   plots/ch07_mask_by_rank.py colours the mask by the rank that computed each block)\n";
}

void print_memory(std::ostream& out, const VariantsReport& r) {
  out << "\n3. Memory per rank (rank 0; MiB): the state kept between steps, and the peaks; then one attention\n"
         "   forward on a layer's shapes: its peak scratch (Temporary) above what was held when it began, and\n"
         "   the K/V it holds in communication buffers, counted (cp_formulas.hpp) and measured (KiB)\n";
  const auto mib = [](const char* header, const char* format) {
    return report::Column{.header = header, .format = format, .scale = 1 / kMiB};
  };
  const auto kib = [](const char* header, const char* format) {
    return report::Column{.header = header, .format = format, .scale = 1 / kKiB};
  };
  report::Table t({label_column(), mib("params", " %8.3f"), mib("grads", " %8.3f"), mib("optimizer", " %9.3f"),
                   mib("peak:activation", " | %15.3f"), mib("temporary", " %9.3f"), mib("total", " %8.3f"),
                   kib("attn scratch", " | %12.1f"), kib("K/V count", " %9.1f"), kib("measured", " %8.1f")});
  for (std::size_t i = 0; i < r.results.size(); ++i)
    t.add(r.rank0_row(i, {"resident_parameter", "resident_gradient", "resident_optimizer_state", "peak_activation",
                          "peak_temporary", "peak_total", "attention_forward_peak_temporary", "attention_kv_formula",
                          "attention_kv_measured"}));
  t.print(out);
  out << "  (every rank holds the whole model: context parallelism splits the activations, not the state. The\n"
         "   all-gather's scratch is its one block's [T, W·T] f32 scores. The ring's count is the block it holds\n"
         "   and the one it receives; the measure sees the received one, and for a moment a sent one the\n"
         "   communicator's progress thread has not let go of yet)\n";
}

void print_comm(std::ostream& out, const VariantsReport& r) {
  out << "\n4. Bytes sent per step (rank 0; KiB) by collective on the cp group, the gradient's all-reduce on the\n"
         "   dp·cp group, and the calls per step\n";
  const auto kib = [](const std::string& header, const char* format) {
    return report::Column{.header = header, .format = format, .scale = 1 / kKiB};
  };
  std::vector<report::Column> c = {label_column()};
  for (CommOp op : kCpOps)
    if (op != CommOp::recv) c.push_back(kib(comm_op_name(op), " %14.1f"));
  c.push_back(kib("dp·cp all_reduce", " %16.1f"));
  c.push_back({.header = "calls: send", .format = " | %11lld"});
  for (const char* h : {"recv", "AG", "RS", "A2A"}) c.push_back({.header = h, .format = " %4lld"});
  report::Table t(std::move(c));
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    std::vector<std::string> keys;
    for (CommOp op : kCpOps)
      if (op != CommOp::recv) keys.push_back(cp_key("sent", op));
    keys.push_back(dp_cp_key("sent"));
    for (CommOp op : kCpOps) keys.push_back(cp_key("calls", op));
    t.add(r.rank0_row(i, keys));
  }
  t.print(out);
  out << "  (per layer and micro-batch: ring forward W-1 hops of K and V, backward W-1 hops of K and V and W\n"
         "   of dK, dV; all-gather forward 2 all-gathers, backward 2 all-gathers and 2 reduce-scatters (one\n"
         "   call per sequence); all-to-all forward q, k, v and the output back, backward the output's\n"
         "   gradient and dq, dk, dv back; plus one all-reduce of the gradient per step)\n"
      << "  measured = the count (cp_formulas.hpp), bytes and calls of every op, on every rank: "
      << (r.comm_matches_count() ? "yes, exactly" : "NO (see cp_variants.csv)") << "\n";
}

void print_speed(std::ostream& out, const VariantsReport& r) {
  out << "\n5. Step time (rank 0; the median of the steps, wall clock), throughput, and for the traced variants\n"
         "   the fraction of their attention's communication time during which the rank computed attention\n";
  report::Table t({label_column(), {.header = "step ms", .format = " %9.1f", .scale = 1e3},
                   {.header = "tokens/s", .format = " %10.0f"},
                   {.header = "hidden", .format = " %7s", .text = [](const report::Value& v) {
                      const double f = std::get<double>(v);
                      char s[32];
                      std::snprintf(s, sizeof s, "%.1f%%", 100 * f);
                      return f < 0 ? std::string("-") : std::string(s);
                    }}});
  for (std::size_t i = 0; i < r.results.size(); ++i)
    t.add(r.rank0_row(i, {"step_seconds", "tokens_per_second", "hidden_fraction"}));
  t.print(out);
  out << "  (CPU ranks sharing a few cores: the times mostly say how the cores were shared. The ring sends the\n"
         "   next K/V block while it computes on the current one; the all-gather and the all-to-all wait for\n"
         "   their collectives before they compute)\n";
}

}  // namespace usp::ch07
