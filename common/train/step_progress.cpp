#include "common/train/step_progress.hpp"

#include <cstdio>
#include <utility>

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

const char* const kMfuAbovePeakNote =
    "  * mfu above 100 %: the matmul peak it divides by (measured once, at the start) came out low, the machine "
    "busy while it ran; every mfu of this run reads too high";

double mfu_percent(const StepProgress& p) {
  if (!(p.peak_flops > 0 && p.flops > 0 && p.seconds > 0)) return NAN;
  return 100.0 * p.flops / p.seconds / (p.peak_flops * p.ranks);
}

std::string progress_line(const StepProgress& p) {
  char head[96];
  std::snprintf(head, sizeof head, "step %4lld  loss %.4f  dt %.1f ms", static_cast<long long>(p.step), p.loss,
                1e3 * p.seconds);
  std::string line = head;
  if (p.seconds > 0) {
    const double rate = static_cast<double>(p.tokens) / p.seconds;
    line += "  tok/s " + grouped(rate);
    if (p.ranks > 1) line += " (" + grouped(rate / p.ranks) + " per rank)";
    if (const double m = mfu_percent(p); !std::isnan(m)) {
      char mfu[32];
      std::snprintf(mfu, sizeof mfu, "  mfu %.1f%%%s", m, m > 100.0 ? "*" : "");
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

void print_progress_line(const std::string& prefix, const StepProgress& p) {
  static bool noted = false;  // the note once per process
  std::printf("%s%s\n", prefix.c_str(), progress_line(p).c_str());
  if (mfu_percent(p) > 100.0 && !std::exchange(noted, true)) std::printf("%s\n", kMfuAbovePeakNote);
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
