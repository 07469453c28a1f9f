#include "common/train/step_progress.hpp"

#include <cstdio>

#include "common/error.hpp"

namespace usp {

namespace {

// 921625 -> "921,625"
std::string grouped(double v) {
  const long long n = std::llround(v);
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string progress_line(const StepProgress& p) {
  char head[96];
  std::snprintf(head, sizeof head, "step %4lld  loss %.4f  dt %.1f ms", static_cast<long long>(p.step), p.loss,
                1e3 * p.seconds);
  std::string line = head;
  if (p.seconds > 0) {
    const double rate = static_cast<double>(p.tokens) / p.seconds;
    line += "  tok/s " + grouped(rate);
    if (p.ranks > 1) line += " (" + grouped(rate / p.ranks) + " per rank)";
    if (p.peak_flops > 0 && p.flops > 0) {
      char mfu[32];
      std::snprintf(mfu, sizeof mfu, "  mfu %.1f%%", 100.0 * p.flops / p.seconds / (p.peak_flops * p.ranks));
      line += mfu;
    }
  }
  if (!std::isnan(p.val_loss)) {
    char val[32];
    std::snprintf(val, sizeof val, "  val_loss %.4f", p.val_loss);
    line += val;
  }
  return line;
}

void add_progress_flags(Cli& cli, std::int64_t eval_every_default) {
  cli.add_int("eval-every", eval_every_default,
              "evaluate the loss on held-out data every N steps and after the last (0: never)", 0, 1 << 30);
  cli.add_int("eval-batches", 4, "held-out batches of --mbs samples per evaluation", 1, 1 << 20);
  cli.add_flag("quiet", "no line per step (tables and summary.json only)");
}

void refuse_eval_flags(Cli& cli, const std::string& why) {
  const std::string where = "; chapters 01 and 03-10 evaluate a held-out loss (--eval-every N)";
  cli.refuse("eval-every", why + where).refuse("eval-batches", why + where);
}

ProgressFlags progress_flags_from(const Cli& cli) {
  const ProgressFlags f{cli.get_int("eval-every"), cli.get_int("eval-batches"), cli.get_flag("quiet")};
  if (f.eval_every == 0 && cli.given("eval-batches"))
    throw UsageError("--eval-batches sets the size of each evaluation; it needs --eval-every N (N >= 1)");
  return f;
}

}  // namespace usp
