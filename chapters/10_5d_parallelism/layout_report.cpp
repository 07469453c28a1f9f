#include "chapters/10_5d_parallelism/layout_report.hpp"

#include <cstdio>
#include <sstream>

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
  std::snprintf(line, sizeof line, "  %4s %2s %2s %2s %2s | %-14s %-14s %-14s %9s | %9s %9s %9s %9s %9s\n", "rank", "dp",
                "tp", "cp", "pp", "params KiB", "grads KiB", "Adam KiB", "act KiB", "tp B", "cp B", "dp·cp B", "pp B",
                "ep B");
  os << line;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const RankFacts& f = r.ranks[i];
    std::snprintf(line, sizeof line, "  %4zu %2d %2d %2d %2d | %-14s %-14s %-14s %9s | %9lld %9lld %9lld %9lld %9lld\n", i,
                  f.dp, f.tp, f.cp, f.pp, versus(f.params, f.calc_params).c_str(), versus(f.grads, f.calc_grads).c_str(),
                  versus(f.optimizer, l.zero == 0 ? f.calc_optimizer : -1).c_str(), kib(f.activations).c_str(),
                  static_cast<long long>(f.sent_tp), static_cast<long long>(f.sent_cp),
                  static_cast<long long>(f.sent_dp_cp), static_cast<long long>(f.sent_pp),
                  static_cast<long long>(f.sent_ep));
    os << line;
  }
  if (r.ranks.front().calc_params < 0)
    os << "  (several chunks per rank: the calculator predicts one stage per rank)\n";
  else
    os << "  every rank holds the calculator's parameter, gradient and optimizer bytes"
       << (l.zero == 1 ? " (ZeRO-1: its largest shard per replica group)" : "") << ": "
       << (r.memory_as_predicted() ? "yes" : "NO") << "\n";
}

std::string layout_ranks_csv(const std::vector<LayoutRun>& runs) {
  std::ostringstream os;
  os << "layout,moe,rank,dp,tp,cp,pp,params,calc_params,grads,calc_grads,optimizer,calc_optimizer,activations,sent_tp,"
        "sent_cp,sent_dp_cp,sent_pp,sent_ep\n";
  for (const LayoutRun& r : runs)
    for (std::size_t i = 0; i < r.ranks.size(); ++i) {
      const RankFacts& f = r.ranks[i];
      os << r.layout.label() << "," << (r.moe ? 1 : 0) << "," << i << "," << f.dp << "," << f.tp << "," << f.cp << ","
         << f.pp << "," << f.params << "," << f.calc_params << "," << f.grads << "," << f.calc_grads << ","
         << f.optimizer << "," << f.calc_optimizer << "," << f.activations << "," << f.sent_tp << "," << f.sent_cp << ","
         << f.sent_dp_cp << "," << f.sent_pp << "," << f.sent_ep << "\n";
    }
  return os.str();
}

}  // namespace usp::ch10
