#include "chapters/12_flash_attention/flash_report.hpp"

#include <string>

namespace usp::ch12 {

namespace {

constexpr double kMiB = 1.0 / 1048576;

report::Column difference(const char* key) { return {.key = key, .header = key, .format = " %10.2e", .json = false}; }

}  // namespace

report::Table equivalence_table(const std::vector<Equivalence>& cases) {
  report::Table t({{.key = "case", .header = "", .format = "%-12s"}, difference("out"), difference("lse"),
                   difference("dq"), difference("dk"), difference("dv"), {.key = "largest_abs_difference"}},
                  "   ");
  for (const Equivalence& e : cases) t.add({e.what, e.out, e.lse, e.dq, e.dk, e.dv, e.largest()});
  return t;
}

report::Table attention_table(const std::vector<AttentionPoint>& points) {
  report::Table t({{.key = "seq", .header = "s", .format = "%6lld"},
                   {.key = "variant", .header = "", .format = " %-6s"},
                   {.key = "forward_ms", .header = "forward ms", .format = " %10.1f", .csv_format = "%.9g"},
                   {.key = "backward_ms", .header = "backward ms", .format = " %11.1f", .csv_format = "%.9g"},
                   {.key = "memory_bytes", .header = "memory MiB", .format = " %12.3f", .scale = kMiB},
                   {.key = "max_abs_error", .header = "max |Δ|", .format = " %10.1e", .csv_format = "%.9g"}},
                  "   ");
  for (const AttentionPoint& p : points)
    t.add({p.seq, p.variant, p.forward_ms, p.backward_ms, p.memory_bytes, p.max_abs_error});
  return t;
}

report::Table training_table(const TrainingRun& naive, const TrainingRun& flash) {
  report::Table t({{.key = "attention", .header = "", .format = "%-6s"},
                   {.key = "losses", .header = "losses", .format = " %-60s"},
                   {.key = "peak_activation_bytes", .header = "peak activations MiB", .format = " %.2f", .scale = kMiB}},
                  "   ");
  for (const auto& [name, run] : {std::pair{"naive", &naive}, std::pair{"flash", &flash}}) {
    std::string losses;
    for (double x : run->losses) losses += std::to_string(x).substr(0, 8) + " ";
    t.add({std::string(name), losses, run->peak_activation_bytes});
  }
  return t;
}

report::Table gpu_ladder_table(const LadderShape& s, const std::vector<RungRun>& runs) {
  const auto shape = [](const char* key) { return report::Column{.key = key, .json = false}; };
  // The error is second on the terminal and in the JSON, last in the CSV: two columns.
  report::Table t({{.key = "rung", .header = "rung", .format = "%-34s"}, shape("batch"), shape("seq"), shape("heads"),
                   shape("kv_heads"), shape("head_dim"),
                   {.key = "error", .header = "error", .format = " %10.2e", .csv = false},
                   {.key = "ms", .header = "ms", .format = " %10.3f"},
                   {.key = "tflops", .header = "TFLOP/s", .format = " %8.2f"}, {.key = "error", .json = false}},
                  "   ");
  for (const RungRun& r : runs)
    t.add({r.rung, std::int64_t{s.batch}, std::int64_t{s.seq}, std::int64_t{s.heads}, std::int64_t{s.kv_heads},
           std::int64_t{s.head_dim}, r.error, r.ms, r.tflops, r.error});
  return t;
}

}  // namespace usp::ch12
