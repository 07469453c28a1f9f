#include "chapters/10_5d_parallelism/layout_report.hpp"

#include <cstdio>

namespace usp::ch10 {

namespace {

std::string kib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / 1024.0);
  return buf;
}

// "123.4 =" when the measurement is the prediction, "123.4 (calc 120.0)" when not, "123.4" when
// there is none.
std::string versus(std::int64_t measured, std::int64_t predicted) {
  if (predicted < 0) return kib(measured);
  return kib(measured) + (measured == predicted ? " =" : " (calc " + kib(predicted) + ")");
}

}  // namespace

void print_layout_run(std::ostream& os, const LayoutRun& r) {
  const Layout5d& l = r.layout;
  os << "\n" << l.label() << (r.moe ? " (MoE)" : "") << ": " << ch08::schedule_kind_name(l.schedule) << ", m = " << l.m;
  if (l.v > 1) os << ", v = " << l.v;
  if (l.cp > 1) os << ", " << ch07::attention_name(l.attention) << " " << ch07::sharding_name(l.sharding);
  char line[256];
  std::snprintf(line, sizeof line, "; median step %.1f ms\n", 1e3 * r.median_step_seconds);
  os << line << "  losses      ";
  for (double x : r.losses) os << " " << x;
  os << "\n  one device  ";
  for (double x : r.reference) os << " " << x;
  std::snprintf(line, sizeof line, "\n  largest relative gap %.1e (bound 1e-6: fp32 sums regrouped over ranks)\n",
                r.max_relative_loss_gap());
  os << line;
  layout_ranks_table({r}).print(os);
  if (r.ranks.front().calc_params < 0)
    os << "  (several chunks per rank: the calculator predicts one stage per rank)\n";
  else
    os << "  every rank holds the calculator's parameter, gradient and optimizer bytes"
       << (l.zero == 1 ? " (ZeRO-1: its largest shard per replica group)" : "") << ": "
       << (r.memory_as_predicted() ? "yes" : "NO") << "\n";
}

report::Table layout_ranks_table(const std::vector<LayoutRun>& runs) {
  const auto both = [](const char* key, const char* header, const char* format) {  // terminal and CSV
    return report::Column{.key = key, .header = header, .format = format};
  };
  const auto kept = [](const char* key) { return report::Column{.key = key}; };  // in the CSV only
  const auto shown = [](const char* key, const char* header, const char* format) {  // on the terminal only
    return report::Column{.key = key, .header = header, .format = format, .csv = false};
  };
  report::Table t({kept("layout"), kept("moe"), both("rank", "rank", "%4lld"), both("dp", "dp", " %2lld"),
                   both("tp", "tp", " %2lld"), both("cp", "cp", " %2lld"), both("pp", "pp", " %2lld"), kept("params"),
                   kept("calc_params"), shown("params_kib", "params KiB", " | %-14s"), kept("grads"), kept("calc_grads"),
                   shown("grads_kib", "grads KiB", " %-14s"), kept("optimizer"), kept("calc_optimizer"),
                   shown("optimizer_kib", "Adam KiB", " %-14s"), kept("activations"), shown("activations_kib", "act KiB", " %9s"),
                   both("sent_tp", "tp B", " | %9lld"), both("sent_cp", "cp B", " %9lld"),
                   both("sent_dp_cp", "dp·cp B", " %9lld"), both("sent_pp", "pp B", " %9lld"),
                   both("sent_ep", "ep B", " %9lld")});
  for (const LayoutRun& r : runs)
    for (std::size_t i = 0; i < r.ranks.size(); ++i) {
      const RankFacts& f = r.ranks[i];
      t.add({r.layout.label(), std::int64_t{r.moe ? 1 : 0}, static_cast<std::int64_t>(i), std::int64_t{f.dp},
             std::int64_t{f.tp}, std::int64_t{f.cp}, std::int64_t{f.pp}, f.params, f.calc_params,
             versus(f.params, f.calc_params), f.grads, f.calc_grads, versus(f.grads, f.calc_grads), f.optimizer,
             f.calc_optimizer, versus(f.optimizer, r.layout.zero == 0 ? f.calc_optimizer : -1), f.activations,
             kib(f.activations), f.sent_tp, f.sent_cp, f.sent_dp_cp, f.sent_pp, f.sent_ep});
    }
  return t;
}

report::Table layouts_table(const std::vector<LayoutRun>& runs) {
  report::Table t({{.key = "layout"}, {.key = "moe"}, {.key = "losses"}, {.key = "max_relative_loss_gap"},
                   {.key = "memory_as_predicted"}, {.key = "median_step_seconds"}});
  for (const LayoutRun& r : runs)
    t.add({r.layout.label(), r.moe, r.losses, r.max_relative_loss_gap(), r.memory_as_predicted(), r.median_step_seconds});
  return t;
}

}  // namespace usp::ch10
